import { staleDistReason } from '../../.ci/build.js';

/**
 * The end-to-end tests run the built dist/cli.js: one built before the last change to src/
 * would test yesterday's code without a word, so they refuse it. `npm test` builds a stale
 * dist/ first (its pretest); a run of vitest alone says what to do.
 */
export default function setup(): void {
  const reason = staleDistReason();
  if (reason !== undefined)
    throw new Error(`${reason}: run npm run build (npm test builds it when stale)`);
}
