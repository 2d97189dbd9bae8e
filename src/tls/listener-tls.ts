import { constants } from 'node:crypto';
import { lstatSync, watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { SecureContextOptions, Server as TlsServer } from 'node:tls';
import { checkKeyPair, type ServablePair } from './check-key-pair.js';

/** RFC 8996 deprecates TLS 1.0 and 1.1; RFC 9325 §3.1.1 asks for 1.2 at least. */
export const MIN_TLS_VERSION = 'TLSv1.2';

/**
 * AEAD suites only (RFC 9325 §4.2), with forward secrecy: on TLS 1.2 ECDHE with AES-GCM or
 * ChaCha20-Poly1305, for ECDSA and RSA certificates; TLS 1.3's suites are all AEAD. Node's
 * default list also offers CBC suites (Lucky Thirteen, RFC 7457 §2.8) and DHE and static-RSA
 * key exchange. Mozilla's "intermediate" list without DHE: every client of the last decade
 * has one of these.
 */
export const LISTENER_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/**
 * What every context of the listener (the first, and each reloaded one) is made with.
 * Renegotiation is refused (OpenSSL answers a TLS 1.2 ClientHello on an established
 * connection with a no_renegotiation alert): a client-initiated one costs the server a full
 * handshake per request of the client (a CPU flood, CVE-2011-1473), and nothing the gateway
 * does asks for one. TLS 1.3 has no renegotiation.
 */
const LISTENER_POLICY = {
  minVersion: MIN_TLS_VERSION,
  ciphers: LISTENER_CIPHERS,
  secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
} as const;

/**
 * A certificate and key are usually replaced one after the other: events within this time
 * are one change, read once both files are likely written.
 */
const WATCH_DEBOUNCE_MS = 200;

export interface ListenerTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** The lines the listener's TLS writes: what it serves now, and what it refused. */
export interface TlsLog {
  info(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

export interface ListenerTlsOptions {
  readonly log: TlsLog;
  /** Milliseconds since the epoch: certificates are checked against it. */
  readonly now: () => number;
  /** A pair was put in service (at start too): its not-after in Unix seconds. */
  readonly onServed: (notAfterSec: number) => void;
  /** A reload that found new files put them in service, or refused them (the served pair stays). */
  readonly onReload: (outcome: 'loaded' | 'refused') => void;
}

/** Refused at start: the gateway cannot serve TLS with these files. */
export class ListenerTlsError extends Error {
  constructor(files: ListenerTlsFiles, reason: string) {
    super(`server.tls: ${reason} (certFile ${files.certFile}, keyFile ${files.keyFile})`);
    this.name = 'ListenerTlsError';
  }
}

export interface ListenerTls {
  /** What https.createServer takes: the first pair, the minimum version, suites, options. */
  readonly serverOptions: SecureContextOptions & typeof LISTENER_POLICY;
  /** Swaps the context of `server` at each accepted reload, and watches the files. */
  attach(server: TlsServer): void;
  /**
   * Reads the files again (`files` when they moved) and serves them if they pass; else logs
   * why and keeps the served pair. Reloads run one after another.
   */
  reload(trigger: string, files?: ListenerTlsFiles): Promise<void>;
  close(): void;
}

interface Pair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** Reads both files and checks them (see checkKeyPair); a refusal says why, in a fixed sentence. */
async function readListenerPair(
  files: ListenerTlsFiles,
  nowMs: number,
): Promise<{ pair: Pair; checked: ServablePair } | { refused: string }> {
  const read = (file: string, which: string): Promise<Buffer | string> =>
    readFile(file).catch((error: unknown) => `cannot read the ${which} file (${codeOf(error)})`);
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

/**
 * The public listener's certificate: checked before it is served, at start and at every
 * reload (SIGHUP, or a change of the files or of their folder), and swapped only when it
 * passes, so that a half-written or mismatched pair never reaches a handshake. Connections
 * keep the context they started with (a swap affects new handshakes only).
 */
export async function loadListenerTls(
  initial: ListenerTlsFiles,
  options: ListenerTlsOptions,
): Promise<ListenerTls> {
  const { log, now } = options;
  let files = initial;
  const first = await readListenerPair(files, now());
  if ('refused' in first) throw new ListenerTlsError(files, first.refused);
  let served = first.pair;
  const announce = (pair: ServablePair, trigger?: string): void => {
    options.onServed(pair.notAfterSec);
    log.info(
      {
        ...(trigger === undefined ? {} : { trigger }),
        serial: pair.serial,
        not_after: new Date(pair.notAfterSec * 1000).toISOString(),
      },
      'TLS certificate loaded',
    );
  };
  announce(first.checked);

  let server: TlsServer | undefined;
  let watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let queue = Promise.resolve();

  /** Serves the files if they changed and pass; else says why not. */
  const swap = async (trigger: string): Promise<{ refused: string } | undefined> => {
    const read = await readListenerPair(files, now());
    if ('refused' in read) return read;
    const { pair, checked } = read;
    // A watch event with nothing new (an editor's touch, the other file of a pair already read).
    if (pair.cert.equals(served.cert) && pair.key.equals(served.key)) return undefined;
    try {
      server?.setSecureContext({ ...pair, ...LISTENER_POLICY });
    } catch {
      // What checkKeyPair cannot see (a key type OpenSSL refuses for TLS).
      return { refused: 'OpenSSL refused the pair for TLS' };
    }
    served = pair;
    options.onReload('loaded');
    announce(checked, trigger);
    return undefined;
  };

  const apply = async (trigger: string): Promise<void> => {
    const outcome = await swap(trigger);
    if (outcome === undefined) return;
    options.onReload('refused');
    log.error(
      { trigger, cert_file: files.certFile, key_file: files.keyFile, reason: outcome.refused },
      'TLS certificate not reloaded; the served one stays',
    );
  };

  const reload = (trigger: string, moved?: ListenerTlsFiles): Promise<void> => {
    queue = queue.then(() => {
      if (
        moved !== undefined &&
        (moved.certFile !== files.certFile || moved.keyFile !== files.keyFile)
      ) {
        files = moved;
        if (server !== undefined) watchFiles();
      }
      return apply(trigger);
    });
    return queue;
  };

  // The folders, not the files: a file replaced by a rename (or Kubernetes' swap of a
  // symlinked folder) leaves a watch on the old file deaf. Every event of a folder counts,
  // since the names it reports vary with the way the file was replaced. A watch follows the
  // folder it was opened on (an inode), not its path: a folder renamed away, or a symlink in
  // the path pointed elsewhere, leaves it on the old one. So the folders that hold such a
  // symlink are watched too, and every watch is opened again, by path, at each change.
  const watchFiles = (): void => {
    for (const watcher of watchers) watcher.close();
    const fileFolders = [dirname(files.certFile), dirname(files.keyFile)];
    const folders = new Set([...fileFolders, ...fileFolders.flatMap(symlinkParents)]);
    watchers = [];
    for (const folder of folders) {
      const unwatched = (error: unknown): void =>
        log.error({ folder, reason: codeOf(error) }, 'TLS certificate folder not watched');
      try {
        const watcher = watch(folder, { persistent: false }, () => {
          clearTimeout(timer);
          timer = setTimeout(() => {
            watchFiles();
            void reload('file change');
          }, WATCH_DEBOUNCE_MS);
          timer.unref();
        });
        watcher.on('error', unwatched);
        watchers.push(watcher);
      } catch (error) {
        // A folder that does not exist (yet): SIGHUP still reloads.
        unwatched(error);
      }
    }
  };

  return {
    serverOptions: { cert: served.cert, key: served.key, ...LISTENER_POLICY },
    attach(target) {
      server = target;
      watchFiles();
    },
    reload,
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      watchers = [];
    },
  };
}

/** The folders holding a symlink on the way to `folder` (its own name included). */
function symlinkParents(folder: string): string[] {
  const parents: string[] = [];
  for (let path = resolve(folder); dirname(path) !== path; path = dirname(path)) {
    try {
      if (lstatSync(path).isSymbolicLink()) parents.push(dirname(path));
    } catch {
      // Not there (yet): the watch of the folder itself says so.
    }
  }
  return parents;
}

function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
}
