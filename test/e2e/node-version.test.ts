import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI } from '../support/gateway-process.js';
import { killCliChildren, runCommand } from '../support/run-cli.js';
import { tempDir } from '../support/temp-dirs.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** A package.json as the repository's, asking for a Node above any that runs today. */
function manifestNeeding(node: string): string {
  const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
    engines: { node: string };
  };
  manifest.engines.node = node;
  return JSON.stringify(manifest, null, 2);
}

afterEach(() => killCliChildren());

describe('a Node older than package.json’s engines', () => {
  it('gets one line naming the Node needed and the remedy, exit 1, before the CLI loads', async () => {
    // The built entry and the one module it may load first, beside a package.json asking
    // for Node 99: the rest of dist/ is not there, so loading it first would fail loudly.
    const root = tempDir('old-node-');
    mkdirSync(join(root, 'dist'));
    for (const file of ['cli.js', 'node-version.js'])
      copyFileSync(join(dirname(CLI), file), join(root, 'dist', file));
    writeFileSync(join(root, 'package.json'), manifestNeeding('>=99.0'));

    const { code, stdout, stderr } = await runCommand(
      process.execPath,
      [join(root, 'dist', 'cli.js'), 'serve'],
      { cwd: root },
    );
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `accounts-gateway needs Node.js >=99.0 (package.json engines); this is Node.js v${process.versions.node}: ` +
        'see the README, Quick start: nvm install 24, or npm install --no-save --no-package-lock ' +
        '--prefix .ci/node node@24 and put .ci/node/node_modules/node/bin first on PATH.\n',
    );
  });

  it('stops npm ci at once with EBADENGINE under the repository’s .npmrc', async () => {
    const root = tempDir('old-node-npm-');
    writeFileSync(join(root, 'package.json'), manifestNeeding('>=99.0'));
    for (const file of ['package-lock.json', '.npmrc'])
      copyFileSync(join(REPO, file), join(root, file));

    const { code, stdout, stderr } = await runCommand(
      'npm',
      ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'],
      { cwd: root },
    );
    expect(code).not.toBe(0);
    expect(`${stdout}${stderr}`).toMatch(/npm error code EBADENGINE/);
    expect(existsSync(join(root, 'node_modules'))).toBe(false);
  });
});
