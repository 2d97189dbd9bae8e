import { readdirSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint, Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import {
  checkImport,
  importLayersRule,
  LAYERS,
  NESTED_ROOMS,
  PACKAGES,
} from '../../../.ci/import-layers.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const srcRoot = `${repo}src`;
const subfolders = (path: string): string[] =>
  readdirSync(path, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
/** Every room: each folder of src/, and each subfolder of a nested room (`backends/redis`). */
const folders = subfolders(srcRoot).flatMap((name) => [
  name,
  ...(NESTED_ROOMS.includes(name)
    ? subfolders(`${srcRoot}/${name}`).map((sub) => `${name}/${sub}`)
    : []),
]);

/** Lints one import line as if it were written in src/<folder>/probe.ts. */
function lintImport(folder: string, specifier: string): string[] {
  const linter = new Linter({ configType: 'flat' });
  const messages = linter.verify(
    `import { x } from '${specifier}';\nexport const y = x;\n`,
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      plugins: { layers: { rules: { 'import-direction': importLayersRule(srcRoot) } } },
      rules: { 'layers/import-direction': 'error' },
    },
    { filename: `${srcRoot}/${folder}/probe.ts` },
  );
  return messages.map((m) => m.message);
}

/** How src/<from>/probe.ts names a module of src/<to>/. */
function specifierOf(from: string, to: string): string {
  const path = relative(`${srcRoot}/${from}`, `${srcRoot}/${to}/module.js`);
  return path.startsWith('.') ? path : `./${path}`;
}

describe('import layers', () => {
  it('names every folder of src/ and no folder that does not exist', () => {
    expect(Object.keys(LAYERS).sort()).toEqual([...folders].sort());
  });

  it('allows only folders that exist', () => {
    for (const allowed of Object.values(LAYERS))
      for (const to of allowed) expect(['<root>', ...folders]).toContain(to);
  });

  it('has no cycle: the allowed arrows only point down', () => {
    const visiting = new Set<string>();
    const done = new Set<string>();
    const visit = (folder: string): void => {
      if (done.has(folder) || folder === '<root>') return;
      expect(visiting.has(folder), `a cycle through ${folder}`).toBe(false);
      visiting.add(folder);
      for (const to of LAYERS[folder] ?? []) visit(to);
      visiting.delete(folder);
      done.add(folder);
    };
    for (const folder of folders) visit(folder);
  });

  it.each(folders)('reports every import from %s/ into a folder it may not use', (from) => {
    for (const to of folders) {
      if (to === from) continue;
      const reported = lintImport(from, specifierOf(from, to));
      if (LAYERS[from]?.includes(to)) expect(reported, `${from} -> ${to}`).toEqual([]);
      else expect(reported, `${from} -> ${to}`).toHaveLength(1);
    }
  });

  it('resolves nested folders: src/auth/jwt may reach errors but not http', () => {
    expect(checkImport(srcRoot, `${srcRoot}/auth/jwt/x.ts`, '../../errors/gateway-error.js')).toBe(
      undefined,
    );
    expect(checkImport(srcRoot, `${srcRoot}/auth/jwt/x.ts`, '../../http/listen.js')).toBe(
      'auth/ may not import http/ (allowed: concurrency, config, credentials, errors, identity, protection)',
    );
    expect(checkImport(srcRoot, `${srcRoot}/auth/jwt/x.ts`, '../identity.js')).toBe(undefined);
  });

  it('keeps the composition root away from the folders below it and the commands away from it', () => {
    expect(lintImport('routing', '../gateway/gateway.js')).toEqual([
      'routing/ may not import gateway/ (allowed: nothing of ours)',
    ]);
    expect(checkImport(srcRoot, `${srcRoot}/gateway/gateway.ts`, '../commands/serve.js')).toMatch(
      /^gateway\/ may not import commands\//,
    );
    expect(checkImport(srcRoot, `${srcRoot}/main.ts`, './commands/serve.js')).toBe(undefined);
  });

  it('treats each subfolder of a nested room as a room: only backends/redis reaches ioredis, and the memory backend cannot import it', () => {
    expect(
      checkImport(srcRoot, `${srcRoot}/backends/memory/x.ts`, '../redis/credential-store.js'),
    ).toBe(
      'backends/memory/ may not import backends/redis/ (allowed: backends, config, credentials, errors, protection)',
    );
    expect(checkImport(srcRoot, `${srcRoot}/backends/redis/x.ts`, '../backend.js')).toBe(undefined);
    expect(checkImport(srcRoot, `${srcRoot}/backends/redis/x.ts`, 'ioredis')).toBe(undefined);
    expect(checkImport(srcRoot, `${srcRoot}/backends/backend.ts`, 'ioredis')).toBe(
      'ioredis belongs to backends/redis: backends reaches it through them',
    );
    expect(checkImport(srcRoot, `${srcRoot}/protection/x.ts`, '../backends/redis/layout.js')).toBe(
      'protection/ may not import backends/redis/ (allowed: config, errors, identity)',
    );
    // The composition root and the CLI's commands (which open a store) alone reach a backend.
    const reaching = Object.entries(LAYERS)
      .filter(([room]) => !room.startsWith('backends'))
      .filter(([, allowed]) => allowed.some((to) => to.startsWith('backends')))
      .map(([room]) => room);
    expect(reaching).toEqual(['gateway', 'commands']);
  });

  it('keeps the entry (cli.ts) to the version check, which must run before any folder loads', () => {
    expect(checkImport(srcRoot, `${srcRoot}/cli.ts`, './node-version.js')).toBe(undefined);
    expect(checkImport(srcRoot, `${srcRoot}/cli.ts`, './commands/serve.js')).toBe(
      'cli.ts may not import commands/',
    );
  });

  it('keeps each library in its room', () => {
    for (const [name, owners] of Object.entries(PACKAGES)) {
      for (const folder of folders) {
        const reported = lintImport(folder, name);
        if (owners.includes(folder)) expect(reported, `${folder} -> ${name}`).toEqual([]);
        else expect(reported, `${folder} -> ${name}`).toHaveLength(1);
      }
    }
    expect(lintImport('http', 'node:http')).toEqual([]);
  });

  it('is switched on for every file under src/ by the lint configuration npm run check uses', async () => {
    const eslint = new ESLint({ cwd: repo, overrideConfigFile: '.ci/eslint.config.js' });
    for (const file of ['src/routing/route-table.ts', 'src/auth/jwt/bearer-verifier.ts']) {
      const config = (await eslint.calculateConfigForFile(file)) as Linter.Config;
      expect(config.rules?.['layers/import-direction']).toEqual([2]);
    }
  });
});
