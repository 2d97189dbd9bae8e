import { describe, expect, it } from 'vitest';
import { substituteEnv } from '../../../src/config/substitute-env.js';

describe('substituteEnv', () => {
  it('replaces references in every string of a tree and leaves other values alone', () => {
    const problems: string[] = [];
    const tree = {
      a: '${A}',
      b: ['x-${B:-two}-y', 3, true, null],
      c: { d: '${D:-4}', e: 5 },
    };
    expect(substituteEnv(tree, { A: 'one' }, problems)).toEqual({
      a: 'one',
      b: ['x-two-y', 3, true, null],
      c: { d: '4', e: 5 },
    });
    expect(problems).toEqual([]);
  });

  it('does not modify the input tree', () => {
    const tree = { a: '${A}' };
    substituteEnv(tree, { A: 'one' }, []);
    expect(tree).toEqual({ a: '${A}' });
  });

  it('keeps a number-like value inside a longer string as a string', () => {
    expect(substituteEnv({ p: ':${PORT}' }, { PORT: '80' }, [])).toEqual({ p: ':80' });
  });

  it('keeps two adjacent references a string', () => {
    expect(substituteEnv({ p: '${A}${B}' }, { A: '1', B: '2' }, [])).toEqual({ p: '12' });
  });

  it('leaves every substituted value a string, for the schema to read numbers from', () => {
    expect(
      substituteEnv({ a: '${A}', b: '${B}', c: '${C}' }, { A: '-5', B: '1.5', C: 'true' }, []),
    ).toEqual({ a: '-5', b: '1.5', c: 'true' });
  });

  it('allows an empty default', () => {
    expect(substituteEnv({ a: '${A:-}' }, {}, [])).toEqual({ a: '' });
  });

  it('records one problem per missing variable, with its path', () => {
    const problems: string[] = [];
    substituteEnv({ list: [{ x: '${X}' }], top: '${Y} and ${Z}' }, {}, problems);
    expect(problems).toEqual([
      'list[0].x: environment variable X is not set',
      'top: environment variable Y is not set',
      'top: environment variable Z is not set',
    ]);
  });

  it('names the root when the document itself is one missing reference', () => {
    const problems: string[] = [];
    substituteEnv('${ROOT}', {}, problems);
    expect(problems).toEqual(['(root): environment variable ROOT is not set']);
  });

  it('does not expand a reference that appears in a variable’s value', () => {
    expect(substituteEnv({ a: '${A}' }, { A: '${B}', B: 'secret' }, [])).toEqual({ a: '${B}' });
  });

  it('leaves text that is not a valid reference untouched', () => {
    expect(substituteEnv({ a: '${1X} ${} $X {Y}' }, {}, [])).toEqual({ a: '${1X} ${} $X {Y}' });
  });
});
