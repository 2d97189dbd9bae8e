import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { anchors, links, readDoc, section, slug } from '../../support/markdown.js';

// The README is a few screens over docs/ (issue 17): a reader follows its links, and the
// docs' links to each other, so every relative one must reach a file and, with `#`, a heading.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const DOCS = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** What is wrong with `target` linked from `from` (both from the repository root), or nothing. */
function broken(from: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#');
  const file = path === '' ? from : posix.join(dirname(from), path);
  if (!existsSync(join(REPO, file))) return `${file} does not exist`;
  if (anchor === undefined) return undefined;
  if (!file.endsWith('.md')) return `${file} is not markdown: #${anchor} names nothing`;
  return anchors(readDoc(file)).has(anchor) ? undefined : `${file} has no heading #${anchor}`;
}

describe('the README and docs/', () => {
  it('keep the README under 400 lines', () => {
    expect(readDoc('README.md').split('\n').length).toBeLessThan(400);
  });

  it('link only to files that exist and headings they have', () => {
    const problems = DOCS.flatMap((doc) =>
      links(readDoc(doc))
        .filter(({ target }) => !/^[a-z][a-z+.-]*:/i.test(target))
        .flatMap(({ target, line }) => {
          const problem = broken(doc, target);
          return problem === undefined ? [] : [`${doc}:${line} (${target}): ${problem}`];
        }),
    );
    expect(problems).toEqual([]);
  });

  it('map every file of docs/ in the README', () => {
    const readme = new Set(links(readDoc('README.md')).map(({ target }) => target.split('#')[0]));
    expect(DOCS.filter((doc) => doc !== 'README.md' && !readme.has(doc))).toEqual([]);
  });
});

describe('slug, anchors and links, as GitHub renders markdown', () => {
  it('slugs a heading the way GitHub anchors it', () => {
    expect(slug('`GET /accounts` (and `/account`, `/accounts/`)')).toBe(
      'get-accounts-and-account-accounts',
    );
    expect(slug('Basic (RFC 7617)')).toBe('basic-rfc-7617');
    expect(slug('Forward auth: nginx, Caddy, Traefik, Envoy')).toBe(
      'forward-auth-nginx-caddy-traefik-envoy',
    );
    expect(slug('`DELETE /keys/{key}`')).toBe('delete-keyskey');
  });

  it('numbers a repeated heading and ignores # lines in code blocks', () => {
    const doc = '# A\n\n```sh\n# B\n```\n\n## A\n\n  ~~~\n  # C\n  ~~~\n';
    expect([...anchors(doc)]).toEqual(['a', 'a-1']);
  });

  it('cuts a section at the next heading of its level or above, never at a # line of code', () => {
    const doc = '# T\n\n## A\n\n```sh\n# 1. a step\n```\n\n### A.1\n\nx\n\n## B\n';
    expect(section(doc, '## A')).toBe('## A\n\n```sh\n# 1. a step\n```\n\n### A.1\n\nx\n');
    expect(section(doc, '### A.1')).toBe('### A.1\n\nx\n');
  });

  it('finds links outside code only', () => {
    const doc = 'see [x](a.md#b) and `[y](no.md)`\n\n```md\n[z](no.md)\n```\n[w](c.md "title")\n';
    expect(links(doc)).toEqual([
      { target: 'a.md#b', line: 1 },
      { target: 'c.md', line: 6 },
    ]);
  });
});
