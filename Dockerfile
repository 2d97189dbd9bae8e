# syntax=docker/dockerfile:1
# accounts-gateway: build with `docker build -t accounts-gateway .`
#   docker run --rm -p 8080:8080 accounts-gateway                  # the embedded demo
#   docker run --rm -p 8080:8080 -e GATEWAY_REDIS_URL=redis://redis:6379 accounts-gateway
#   docker run --rm -v "$PWD/my.yaml:/app/config/gateway.yaml:ro" accounts-gateway check
#   docker run --rm -p 8080:8080 -p 127.0.0.1:9090:9090 -e GATEWAY_ADMIN_HOST=0.0.0.0 accounts-gateway
# With its Redis and the nginx example: docker compose -f config/compose.yaml up --build --wait

# --- deps: every dependency (dev included), for the build --------------------------------
FROM node:24-bookworm-slim AS deps
WORKDIR /app
# bcrypt ships prebuilt binaries (linux x64/arm64, glibc and musl), loaded at run time by
# node-gyp-build, so no compiler is needed (its install script, allowed in package.json's
# allowScripts, finds the prebuild and builds nothing).
# On a platform without a prebuild, node-gyp would compile it, and this stage (and the
# runtime stage's `npm ci`, or a separate production-deps stage copied from) would need:
#   RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
#       && rm -rf /var/lib/apt/lists/*
# .npmrc: engine-strict, so an image whose Node is older than package.json's engines fails
# here, at `npm ci`, rather than at start.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund

# --- build: TypeScript -> dist/ -----------------------------------------------------------
FROM deps AS build
COPY tsconfig.json ./
COPY .ci/check-node.cjs .ci/build.ts ./.ci/
COPY src ./src
RUN npm run build

# --- runtime: production dependencies, the compiled code and the default config ----------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
# config/gateway.yaml binds the API to ${GATEWAY_HOST:-127.0.0.1}: listen on every interface
# in the container. The admin port stays on loopback (${GATEWAY_ADMIN_HOST:-127.0.0.1}): it
# serves the HEALTHCHECK below, from inside the container; EXPOSE 9090 reaches it once
# GATEWAY_ADMIN_HOST=0.0.0.0 is set (keep that port private: it has no authentication).
ENV GATEWAY_HOST=0.0.0.0
USER node
EXPOSE 8080 9090
# No curl in slim images: probe /healthz with node itself. Assumes the admin port 9090 and
# admin.enabled (the defaults); a config that changes them must change this too.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The young generation capped at 2 x 16 MiB: left alone, V8 grows it to 128 MiB under load
# (see docs/operations.md).
ENTRYPOINT ["node", "--max-semi-space-size=16", "dist/cli.js"]
CMD ["serve"]
