import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { holdsCertificate, matchKeyPair } from './check-key-pair.js';

/** The files and name of an upstream's TLS, as configured. */
export interface UpstreamTlsFiles {
  readonly caFile?: string | undefined;
  readonly servername?: string | undefined;
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
}

/** What both engines hand to tls.connect: verification is never turned off here. */
export interface UpstreamTlsOptions {
  /** Trusted instead of Node's bundled CAs (a private CA). */
  readonly ca?: Buffer;
  /** The name sent in SNI and checked against the certificate (RFC 6125), else the URL's host. */
  readonly servername?: string;
  /** A client certificate and key, for an upstream that asks for one. */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/**
 * A TLS file that cannot serve: `setting` is its key under the upstream's `tls` (caFile,
 * keyFile...), so that the caller can name its full YAML path.
 */
export class TlsFileError extends Error {
  constructor(
    readonly setting: string,
    readonly reason: string,
  ) {
    super(`${setting}: ${reason}`);
    this.name = 'TlsFileError';
  }
}

/**
 * Reads the files named (at start and at each reload, so a renewed CA is taken then) and
 * checks them as OpenSSL will: a CA file must hold a certificate, a client key must be its
 * certificate's. Either engine would otherwise find out on a request: http-proxy-3 builds
 * the context inside https.request, where OpenSSL's refusal is an uncaught exception that
 * ends the process.
 */
export async function readUpstreamTls(files: UpstreamTlsFiles): Promise<UpstreamTlsOptions> {
  const read = (setting: string, file: string | undefined): Promise<Buffer | undefined> =>
    file === undefined
      ? Promise.resolve(undefined)
      : readFile(file).catch((error: unknown) => {
          const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
          // Relative to the working directory: the full path says which one that was.
          throw new TlsFileError(setting, `cannot read ${resolve(file)} (${code})`);
        });
  const [ca, cert, key] = await Promise.all([
    read('caFile', files.caFile),
    read('certFile', files.certFile),
    read('keyFile', files.keyFile),
  ]);
  if (ca !== undefined && !holdsCertificate(ca))
    throw new TlsFileError('caFile', `${files.caFile ?? ''} holds no PEM certificate`);
  if (cert !== undefined && key !== undefined) {
    const matched = matchKeyPair(cert, key);
    if (!matched.ok) {
      const setting = matched.reason.startsWith('the certificate') ? 'certFile' : 'keyFile';
      const named = `certFile ${files.certFile ?? ''}, keyFile ${files.keyFile ?? ''}`;
      throw new TlsFileError(setting, `${matched.reason} (${named})`);
    }
  }
  const options = {
    ...(ca === undefined ? {} : { ca }),
    ...(files.servername === undefined ? {} : { servername: files.servername }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
  };
  try {
    createSecureContext(options);
  } catch {
    // What the checks above cannot see (a key type OpenSSL refuses for TLS).
    throw new TlsFileError('certFile', 'OpenSSL refused the certificate and key for TLS');
  }
  return options;
}
