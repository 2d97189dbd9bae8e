#!/usr/bin/env -S node --max-semi-space-size=16
// The entry. It must run on any Node long enough to say which one the gateway needs, so it
// checks the version before importing the rest (on Node 20, undici throws while loading)
// and imports nothing else statically. The needed version is package.json's engines.node,
// read here, never copied.
import { readFileSync } from 'node:fs';
import { nodeVersionProblem } from './node-version.js';

function requiredNode(): string | undefined {
  try {
    const manifest = JSON.parse(
      readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { engines?: { node?: string } };
    return manifest.engines === undefined ? undefined : manifest.engines.node;
  } catch {
    // No readable package.json beside dist/: nothing to check against.
    return undefined;
  }
}

const problem = nodeVersionProblem(requiredNode(), process.versions.node);
if (problem === undefined) {
  void import('./main.js');
} else {
  // One line, no stack trace: the operator's next step is in it.
  process.stderr.write(`${problem}\n`);
  process.exitCode = 1;
}
