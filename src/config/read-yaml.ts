import { LineCounter, parseDocument } from 'yaml';

/**
 * Parses a YAML text into plain values. Each syntax error becomes one line with its place
 * and the parser's own words (`YAML line 3, column 3: Map keys must be unique`): the
 * parser's pretty form appends a source excerpt after a colon, which a list of problems
 * cannot show. A repeated key is an error, not a silent last-one-wins.
 */
export function readYaml(text: string): { tree: unknown; problems: string[] } {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  const problems = document.errors.map((error) => {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    return `YAML line ${line}, column ${col}: ${error.message}`;
  });
  return { tree: problems.length > 0 ? undefined : document.toJS(), problems };
}
