// Loaded by the entry before anything else, on whatever Node runs it: no syntax newer than
// ES2019 (no `??` or `?.`), so that even an old Node parses it and can say what it lacks.

/** Where a newcomer on an old Node finds the remedy (README, Quick start). */
const REMEDY =
  'see the README, Quick start: nvm install 24, or npm install --no-save --no-package-lock --prefix .ci/node node@24 and put .ci/node/node_modules/node/bin first on PATH';

/**
 * Why `running` (process.versions.node) cannot run the gateway, as one line, or undefined
 * when it can. `engines` is package.json's `engines.node`; only its `>=X.Y.Z` form is read
 * (X.Y and X allowed), anything else is not checked here (npm's engine-strict still is).
 */
export function nodeVersionProblem(
  engines: string | undefined,
  running: string,
): string | undefined {
  const wanted = /^>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec((engines || '').trim());
  if (wanted === null || engines === undefined) return undefined;
  const have = running.replace(/^v/, '').split('.').map(Number);
  for (let i = 0; i < 3; i += 1) {
    const need = Number(wanted[i + 1] || 0);
    const got = have[i] || 0;
    if (got > need) return undefined;
    if (got < need)
      return `accounts-gateway needs Node.js ${engines.trim()} (package.json engines); this is Node.js v${running}: ${REMEDY}.`;
  }
  return undefined;
}
