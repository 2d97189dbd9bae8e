import { readFile } from 'node:fs/promises';
import { checkKeyPair, type ServablePair } from './check-key-pair.js';
import { errorCode } from './error-code.js';

export interface ListenerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface Pair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** Reads both files and checks them (see checkKeyPair); a refusal says why, in a fixed sentence. */
export async function readListenerPair(
  files: ListenerTlsFiles,
  nowMs: number,
): Promise<{ pair: Pair; checked: ServablePair } | { refused: string }> {
  const read = (file: string, which: string): Promise<Buffer | string> =>
    readFile(file).catch((error: unknown) => `cannot read the ${which} file (${errorCode(error)})`);
  const [cert, key] = await Promise.all([
    read(files.certFile, 'certificate'),
    read(files.keyFile, 'key'),
  ]);
  if (typeof cert === 'string') return { refused: cert };
  if (typeof key === 'string') return { refused: key };
  const pair = { cert, key };
  const checked = checkKeyPair(pair.cert, pair.key, nowMs);
  return checked.ok ? { pair, checked } : { refused: checked.reason };
}
