/**
 * The forwarding engine the e2e suite runs against. The vitest config runs the forwarding
 * files a second time with TEST_FORWARDING_ENGINE=undici (a project of its own), so one
 * suite covers both engines; unset, the default engine runs.
 */
export const FORWARDING_ENGINE: 'http-proxy-3' | 'undici' | undefined = (() => {
  const engine = process.env.TEST_FORWARDING_ENGINE;
  if (engine === undefined || engine === '') return undefined;
  if (engine !== 'http-proxy-3' && engine !== 'undici')
    throw new Error(`TEST_FORWARDING_ENGINE must be http-proxy-3 or undici, not ${engine}`);
  return engine;
})();
