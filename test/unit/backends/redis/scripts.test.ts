import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALL_SCRIPTS } from '../../../../src/backends/redis/scripts.js';

const SCRIPTS = new URL('../../../../src/backends/redis/scripts/', import.meta.url);

/** The script as written: its source without the prologue run-script.ts puts first. */
const written = (source: string): string => source.slice(source.indexOf('\n') + 1);

/** The names a script reads from `table` (KEY or ARG). */
function namesRead(source: string, table: 'KEY' | 'ARG'): string[] {
  return [
    ...new Set(
      [...source.matchAll(new RegExp(`\\b${table}\\.(\\w+)`, 'g'))].map((m) => m[1] ?? ''),
    ),
  ];
}

const base = (name: string): string => name.replace(/\[\]$/, '');

describe('the Redis scripts', () => {
  it.each(ALL_SCRIPTS.map((script) => [script.name, script] as const))(
    '%s reads KEYS and ARGV only by the names its definition declares',
    (_name, script) => {
      const source = written(script.source);
      expect(source).not.toMatch(/\bKEYS\s*\[|\bARGV\s*\[/);
      expect(namesRead(source, 'KEY').filter((n) => !script.keys.map(base).includes(n))).toEqual(
        [],
      );
      expect(namesRead(source, 'ARG').filter((n) => !script.args.map(base).includes(n))).toEqual(
        [],
      );
    },
  );

  it('defines every file of scripts/, as a script or as a library scripts include', () => {
    const files = readdirSync(SCRIPTS).filter((file) => file.endsWith('.lua'));
    const defined = new Set(ALL_SCRIPTS.map((script) => script.name));
    expect(files.filter((file) => !defined.has(file)).sort()).toEqual([
      'pair-index.lua',
      'user-sessions.lua',
    ]);
    const sessions = readFileSync(new URL('user-sessions.lua', SCRIPTS), 'utf8');
    expect(ALL_SCRIPTS.filter((s) => s.source.includes(sessions)).map((s) => s.name)).toEqual([
      'set-user-password.lua',
      'remove-user.lua',
      'create-session.lua',
      'end-user-sessions.lua',
    ]);
    const library = readFileSync(new URL('pair-index.lua', SCRIPTS), 'utf8');
    expect(ALL_SCRIPTS.filter((s) => s.source.includes(library)).map((s) => s.name)).toEqual([
      'create-pair.lua',
      'count-active-pairs.lua',
      'revoke-pair.lua',
      'revoke-subject-pairs.lua',
      'list-pairs.lua',
      'adopt-pair.lua',
    ]);
  });
});
