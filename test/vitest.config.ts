import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The forwarding suite: every file whose gateway forwards to an upstream and asserts what
 * crosses it. It runs once more against the undici engine (see support/forwarding-engine).
 */
const FORWARDING_SUITE = [
  'test/e2e/forwarding-headers.test.ts',
  'test/e2e/upstream-errors.test.ts',
  'test/e2e/routing-paths.test.ts',
  'test/e2e/smoke.test.ts',
  'test/e2e/reload.test.ts',
  'test/e2e/errors-framing.test.ts',
  'test/e2e/tracing.test.ts',
  'test/e2e/body-framing.test.ts',
];

export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // Every answer of a gateway's public port that fetch reads is checked against the OpenAPI
    // document (send and rawRequest check theirs themselves).
    setupFiles: ['test/support/openapi-fetch-check.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Two cores: the e2e files each start gateway processes; keep them from starving each other.
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'gateway', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'undici engine',
          include: FORWARDING_SUITE,
          env: { TEST_FORWARDING_ENGINE: 'undici' },
        },
      },
    ],
  },
});
