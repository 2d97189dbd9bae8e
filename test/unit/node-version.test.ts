import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from '../../src/node-version.js';

/** The npm scripts' check (.ci/check-node.cjs): the same rule, for any Node. */
const scriptsCheck = createRequire(import.meta.url)('../../.ci/check-node.cjs') as {
  nodeVersionProblem: typeof nodeVersionProblem;
};

describe('nodeVersionProblem', () => {
  it.each([
    ['>=22.22', '22.22.0'],
    ['>=22.22', '22.22.1'],
    ['>=22.22', '24.0.0'],
    ['>=22.22.1', '22.22.1'],
    ['>=22', '22.0.0'],
    ['>= v22.22', '23.1.0'],
  ])('accepts %s on Node %s', (engines, running) => {
    expect(nodeVersionProblem(engines, running)).toBeUndefined();
  });

  it.each([
    ['>=22.22', '20.19.2'],
    ['>=22.22', '22.21.9'],
    ['>=22.22', '18.20.8'],
    ['>=22.22.1', '22.22.0'],
  ])('refuses %s on Node %s', (engines, running) => {
    expect(nodeVersionProblem(engines, running)).toMatch(/^accounts-gateway needs Node\.js /);
  });

  it('says in one line what is needed, what runs and the README’s remedy', () => {
    expect(nodeVersionProblem('>=22.22', '20.19.2')).toBe(
      'accounts-gateway needs Node.js >=22.22 (package.json engines); this is Node.js v20.19.2: ' +
        'see the README, Quick start: nvm install 24, or npm install --no-save --no-package-lock ' +
        '--prefix .ci/node node@24 and put .ci/node/node_modules/node/bin first on PATH.',
    );
  });

  it('checks nothing when engines is missing or not of the >=X.Y.Z form', () => {
    expect(nodeVersionProblem(undefined, '1.0.0')).toBeUndefined();
    expect(nodeVersionProblem('^22.22 || >=24', '1.0.0')).toBeUndefined();
  });
});

describe('.ci/check-node.cjs, run before any build', () => {
  it.each([
    ['>=22.22', '22.22.0'],
    ['>=22.22', '24.0.0'],
    ['>=22.22.1', '22.22.1'],
    ['>= v22.22', '23.1.0'],
    ['>=22.22', '20.19.2'],
    ['>=22.22', '22.21.9'],
    ['>=22.22.1', '22.22.0'],
    ['^22.22 || >=24', '1.0.0'],
  ])('answers %s on Node %s as the CLI does', (engines, running) => {
    expect(scriptsCheck.nodeVersionProblem(engines, running)).toBe(
      nodeVersionProblem(engines, running),
    );
  });
});
