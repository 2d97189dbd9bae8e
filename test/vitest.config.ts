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

/** One Redis per project that needs one (./support/redis-setup.ts). */
const REDIS = 'test/support/redis-setup.ts';
/** The built dist/ is today's (./support/dist-setup.ts): the end-to-end files run it. */
const FRESH_DIST = 'test/support/dist-setup.ts';

/**
 * An end-to-end test starts processes: gateways (three with --workers 2), CLI runs, proxies,
 * each a cold start of about a second of CPU before it does anything. On two cores shared with
 * other work that is several seconds each, so a test of a few starts outgrew 20 s without
 * anything being wrong. Its waits are bounded by events and their own deadlines (support/
 * within): this bound only ends a test that hangs.
 */
const E2E_TEST_TIMEOUT_MS = 60_000;

export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    // Once per run, whichever projects run: the run's own temp directory, checked empty at
    // the end. The projects add what their files need, so `--project unit` (npm run
    // test:unit) or one unit file starts no Redis and needs no build.
    globalSetup: ['test/support/global-setup.ts'],
    // Every answer of a gateway's public port that fetch reads is checked against the OpenAPI
    // document (send and rawRequest check theirs themselves); the folders of support/temp-dirs
    // are removed after each file.
    setupFiles: ['test/support/openapi-fetch-check.ts', 'test/support/remove-temp-dirs.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Two cores: the e2e files each start gateway processes; keep them from starving each other.
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: [REDIS],
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: [FRESH_DIST, REDIS],
          testTimeout: E2E_TEST_TIMEOUT_MS,
        },
      },
      {
        extends: true,
        test: {
          name: 'undici engine',
          include: FORWARDING_SUITE,
          env: { TEST_FORWARDING_ENGINE: 'undici' },
          globalSetup: [FRESH_DIST, REDIS],
          testTimeout: E2E_TEST_TIMEOUT_MS,
        },
      },
    ],
  },
});
