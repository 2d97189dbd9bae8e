import type { Server } from 'node:http';
import type { GatewayConfig } from '../config/config-schema.js';
import { closeServer, listenOn } from '../http/listen.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { createUpstreamTarget, type Forwarder } from '../proxy/forwarder.js';
import { createHttpProxyForwarder } from '../proxy/http-proxy-forwarder.js';
import { createUndiciForwarder } from '../proxy/undici-forwarder.js';
import { createReferenceUpstream } from '../reference-upstream/reference-upstream.js';
import { readUpstreamTls } from '../tls/upstream-tls.js';

/** The configured upstreams, a forwarder each, by name. */
export interface Upstreams {
  readonly forwarders: ReadonlyMap<string, Forwarder>;
  /** Frees their connections and the built-in upstream (once requests have drained). */
  close(): Promise<void>;
}

/** `url: builtin` starts the reference upstream on a loopback port of its own. */
export async function buildUpstreams(
  config: GatewayConfig,
  metrics: GatewayMetrics,
): Promise<Upstreams> {
  const helpers: Server[] = [];
  const forwarders = new Map<string, Forwarder>();
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    let url: URL;
    if (upstream.url === 'builtin') {
      const reference = createReferenceUpstream(config.referenceUpstream.accounts);
      helpers.push(reference);
      url = new URL(`http://127.0.0.1:${await listenOn(reference, '127.0.0.1', 0)}`);
    } else {
      url = new URL(upstream.url);
    }
    const tls = upstream.tls === undefined ? {} : await readUpstreamTls(upstream.tls);
    const target = createUpstreamTarget(name, url, upstream, tls);
    const engine = upstream.engine === 'undici' ? createUndiciForwarder : createHttpProxyForwarder;
    forwarders.set(name, engine(target, metrics.upstream(name)));
  }
  return {
    forwarders,
    async close() {
      await Promise.all(helpers.map(closeServer));
      for (const forwarder of forwarders.values()) forwarder.close();
    },
  };
}
