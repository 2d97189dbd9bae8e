// The first step of `npm start`, `npm test`, `npm run build` and `npm run bench`, and .ci/run's
// test of the Node it found: it runs before anything is built, on whatever Node is there, so
// it is ES5 (no `const`, arrows, `??`) that even an old Node parses, and it needs nothing
// installed. The rule and the sentence are src/node-version.ts's (the CLI's own check, which
// must live in dist/); test/unit/node-version.test.ts holds the two to the same answers.
//
// Exit 0 when this Node can run the gateway; else one line on stderr and exit 1.
// `--installed`: also exit 1, saying to run `npm ci`, when the dependencies are not there
// (otherwise the next step fails with `tsc: not found`).
'use strict';

var fs = require('fs');
var path = require('path');

var ROOT = path.join(__dirname, '..');

var REMEDY =
  'see the README, Quick start: nvm install 24, or npm install --no-save --no-package-lock --prefix .ci/node node@24 and put .ci/node/node_modules/node/bin first on PATH';

/** Why `running` cannot run the gateway, or undefined; as src/node-version.ts. */
function nodeVersionProblem(engines, running) {
  var wanted = /^>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec((engines || '').trim());
  if (wanted === null || engines === undefined) return undefined;
  var have = running.replace(/^v/, '').split('.').map(Number);
  for (var i = 0; i < 3; i += 1) {
    var need = Number(wanted[i + 1] || 0);
    var got = have[i] || 0;
    if (got > need) return undefined;
    if (got < need)
      return (
        'accounts-gateway needs Node.js ' +
        engines.trim() +
        ' (package.json engines); this is Node.js v' +
        running +
        ': ' +
        REMEDY +
        '.'
      );
  }
  return undefined;
}

/** What is missing for a build and a test run, or undefined. */
function dependencyProblem(root) {
  var needed = ['typescript', 'vitest'];
  for (var i = 0; i < needed.length; i += 1) {
    if (!fs.existsSync(path.join(root, 'node_modules', needed[i], 'package.json')))
      return (
        'accounts-gateway: the dependencies are not installed (no node_modules/' +
        needed[i] +
        '): run npm ci first.'
      );
  }
  return undefined;
}

module.exports = { nodeVersionProblem: nodeVersionProblem, dependencyProblem: dependencyProblem };

if (require.main === module) {
  var manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  var problem = nodeVersionProblem(
    manifest.engines === undefined ? undefined : manifest.engines.node,
    process.versions.node
  );
  if (problem === undefined && process.argv.indexOf('--installed') !== -1)
    problem = dependencyProblem(ROOT);
  if (problem !== undefined) {
    process.stderr.write(problem + '\n');
    process.exitCode = 1;
  }
}
