import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { codeBlocks, readDoc, section } from '../support/markdown.js';

// README "From zero to a token" is pasted by newcomers, often while the `npm start` of the
// Quick start still holds 8080 and 9090. Its first block must then stop with a message naming
// the port, and start nothing: before, it printed the old gateway's `ready` and the
// walk-through failed three steps later in a way that named neither.

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The shell blocks of the walk-through section, in order. */
function walkThroughBlocks(): string[] {
  return codeBlocks(section(readDoc('README.md'), '## From zero to a token'), 'sh');
}

/** Listens on 127.0.0.1:`port`; resolves undefined when something else already holds it. */
function holdPort(port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error),
    );
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** True while a process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

let shell: ChildProcess | undefined;
let holder: Server | undefined;
let fakeBin: string | undefined;

afterEach(async () => {
  // Whatever the block started (a broken guard would start Redis and a gateway) goes too.
  const pgid = shell?.pid;
  if (pgid !== undefined && groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  shell = undefined;
  const server = holder;
  holder = undefined;
  if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  if (fakeBin !== undefined) rmSync(fakeBin, { recursive: true, force: true });
  fakeBin = undefined;
});

describe('the README walk-through', () => {
  it('says in its first block to stop the npm start of the Quick start', () => {
    expect(walkThroughBlocks()[0]).toMatch(/^# 1\. Stop the `npm start` of the Quick start first/);
  });

  it('stops its first block with a message naming a taken port, exits non-zero and starts nothing', async () => {
    holder = await holdPort(8080);
    // `npm run build` must never rebuild dist/ under the other test files, whatever the block
    // does: a stand-in npm on the PATH does nothing.
    fakeBin = mkdtempSync(join(tmpdir(), 'gw-walkthrough-'));
    writeFileSync(join(fakeBin, 'npm'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(fakeBin, 'npm'), 0o755);
    const [block = ''] = walkThroughBlocks();
    // Its own process group: whatever it starts in the background can be found and stopped.
    const child = spawn('bash', ['-c', block], {
      cwd: REPO,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PATH: `${fakeBin}:${process.env.PATH ?? ''}` },
    });
    shell = child;
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toMatch(
      /^walk-through: port\(s\)( \d+)* 8080( \d+)* already in use on 127\.0\.0\.1; .*npm start/,
    );
    expect(groupAlive(child.pid ?? 0)).toBe(false);
  });
});
