import { constants } from 'node:crypto';
import type { SecureContextOptions, Server as TlsServer } from 'node:tls';
import type { ServablePair } from './check-key-pair.js';
import { readListenerPair, type ListenerTlsFiles, type Pair } from './read-listener-pair.js';
import { watchFolders } from './watch-folders.js';

export type { ListenerTlsFiles } from './read-listener-pair.js';

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

/** What is served now, and where it came from. */
interface Served {
  files: ListenerTlsFiles;
  pair: Pair;
  /** The listener, once attached: where a reloaded pair is swapped in. */
  server: TlsServer | undefined;
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
  const first = await readListenerPair(initial, options.now());
  if ('refused' in first) throw new ListenerTlsError(initial, first.refused);
  announce(options, first.checked);
  const served: Served = { files: initial, pair: first.pair, server: undefined };
  let queue = Promise.resolve();
  const reload = (trigger: string, moved?: ListenerTlsFiles): Promise<void> => {
    queue = queue.then(() => {
      if (
        moved !== undefined &&
        (moved.certFile !== served.files.certFile || moved.keyFile !== served.files.keyFile)
      ) {
        served.files = moved;
        if (served.server !== undefined) folders.rewatch();
      }
      return applyReload(served, options, trigger);
    });
    return queue;
  };
  const folders = watchFolders(
    () => served.files,
    options.log,
    () => void reload('file change'),
  );
  return {
    serverOptions: { cert: served.pair.cert, key: served.pair.key, ...LISTENER_POLICY },
    attach(target) {
      served.server = target;
      folders.rewatch();
    },
    reload,
    close: () => folders.close(),
  };
}

/** A pair was put in service (at start, or by a reload: its trigger). */
function announce(options: ListenerTlsOptions, pair: ServablePair, trigger?: string): void {
  options.onServed(pair.notAfterSec);
  options.log.info(
    {
      ...(trigger === undefined ? {} : { trigger }),
      serial: pair.serial,
      not_after: new Date(pair.notAfterSec * 1000).toISOString(),
    },
    'TLS certificate loaded',
  );
}

/** Serves the files if they changed and pass; else says why not. */
async function swap(
  served: Served,
  options: ListenerTlsOptions,
  trigger: string,
): Promise<{ refused: string } | undefined> {
  const read = await readListenerPair(served.files, options.now());
  if ('refused' in read) return read;
  const { pair, checked } = read;
  // A watch event with nothing new (an editor's touch, the other file of a pair already read).
  if (pair.cert.equals(served.pair.cert) && pair.key.equals(served.pair.key)) return undefined;
  try {
    served.server?.setSecureContext({ ...pair, ...LISTENER_POLICY });
  } catch {
    // What checkKeyPair cannot see (a key type OpenSSL refuses for TLS).
    return { refused: 'OpenSSL refused the pair for TLS' };
  }
  served.pair = pair;
  options.onReload('loaded');
  announce(options, checked, trigger);
  return undefined;
}

/** One reload: the new pair served, or its refusal counted and logged. */
async function applyReload(
  served: Served,
  options: ListenerTlsOptions,
  trigger: string,
): Promise<void> {
  const outcome = await swap(served, options, trigger);
  if (outcome === undefined) return;
  options.onReload('refused');
  const { certFile, keyFile } = served.files;
  options.log.error(
    { trigger, cert_file: certFile, key_file: keyFile, reason: outcome.refused },
    'TLS certificate not reloaded; the served one stays',
  );
}
