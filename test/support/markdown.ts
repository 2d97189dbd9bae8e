// What a markdown file offers to links (its headings' anchors, as GitHub makes them) and what
// it links to, outside code: enough to check that the README and docs/ link only to what exists;
// and its sections and code blocks, for the tests that run or compare what the docs show.
import { readFileSync } from 'node:fs';

/** A documentation file (`README.md`, `docs/api.md`, …), by its path from the repository root. */
export const readDoc = (path: string): string =>
  readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

interface Scanned {
  /** The lines outside fenced blocks, numbered from 1. */
  readonly prose: { readonly text: string; readonly line: number }[];
  /** Each fenced block's language (the first word after its fence) and the lines inside it. */
  readonly blocks: { readonly lang: string; readonly body: string }[];
}

/** `markdown` split at its fences (``` or ~~~, indented too) into prose lines and blocks. */
function scan(markdown: string): Scanned {
  const prose: { text: string; line: number }[] = [];
  const blocks: { lang: string; body: string }[] = [];
  let open: { fence: string; lang: string; lines: string[] } | undefined;
  markdown.split('\n').forEach((text, i) => {
    const opener = /^\s*(`{3,}|~{3,})\s*(\S*)/.exec(text);
    if (open === undefined && opener?.[1] !== undefined)
      open = { fence: opener[1], lang: opener[2] ?? '', lines: [] };
    else if (open !== undefined && text.trim().startsWith(open.fence)) {
      blocks.push({ lang: open.lang, body: open.lines.join('\n') });
      open = undefined;
    } else if (open !== undefined) open.lines.push(text);
    else prose.push({ text, line: i + 1 });
  });
  return { prose, blocks };
}

const proseLines = (markdown: string) => scan(markdown).prose;

/** The bodies of `markdown`'s fenced blocks in language `lang` (```sh: 'sh'), in order. */
export function codeBlocks(markdown: string, lang: string): string[] {
  return scan(markdown)
    .blocks.filter((block) => block.lang === lang)
    .map((block) => block.body);
}

/**
 * The part of `markdown` under the heading line `heading` (`## Errors`), that line included, up
 * to the next heading of its level or above; throws when there is no such heading.
 */
export function section(markdown: string, heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 0;
  const lines = markdown.split('\n');
  const prose = proseLines(markdown);
  const start = prose.find(({ text }) => text === heading)?.line;
  if (start === undefined) throw new Error(`no heading ${heading}`);
  const end = prose.find(
    ({ text, line }) => line > start && (/^#+(?= )/.exec(text)?.[0].length ?? 99) <= level,
  )?.line;
  return lines.slice(start - 1, end === undefined ? undefined : end - 1).join('\n');
}

/**
 * GitHub's anchor for a heading's text (github-slugger): the rendered text (code spans and
 * link texts kept, markup dropped), lower-cased, anything but letters, marks, digits, `_`,
 * spaces and hyphens removed, spaces turned into hyphens.
 */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading's anchor; a repeated one gets `-1`, `-2`, … as on GitHub. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

export interface Link {
  readonly target: string;
  readonly line: number;
}

/** The targets of inline links `[text](target)` outside code blocks and code spans. */
export function links(markdown: string): Link[] {
  const out: Link[] = [];
  for (const { text, line } of proseLines(markdown)) {
    const prose = text.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (match[1] !== undefined) out.push({ target: match[1], line });
    }
  }
  return out;
}
