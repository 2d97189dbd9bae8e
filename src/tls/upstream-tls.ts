import { readFile } from 'node:fs/promises';

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

/** Reads the files named (at start and at each reload, so a renewed CA is taken then). */
export async function readUpstreamTls(files: UpstreamTlsFiles): Promise<UpstreamTlsOptions> {
  const read = (file: string | undefined): Promise<Buffer | undefined> =>
    file === undefined ? Promise.resolve(undefined) : readFile(file);
  const [ca, cert, key] = await Promise.all([
    read(files.caFile),
    read(files.certFile),
    read(files.keyFile),
  ]);
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(files.servername === undefined ? {} : { servername: files.servername }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
  };
}
