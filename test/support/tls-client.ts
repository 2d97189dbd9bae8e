import { connect, type ConnectionOptions } from 'node:tls';

/** How a TLS handshake ended: the version agreed on, or the error that ended it. */
export type Handshake =
  | { readonly ok: true; readonly protocol: string | null; readonly serial: string }
  | { readonly ok: false; readonly code: string; readonly message: string };

/**
 * One handshake with 127.0.0.1:`port` (certificate checked against `ca` for the name
 * `localhost` unless `options` say otherwise), then the connection is closed.
 */
export function handshake(
  port: number,
  ca: string,
  options: ConnectionOptions = {},
): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ...options });
    socket.once('secureConnect', () => {
      const serial = socket.getPeerCertificate().serialNumber;
      resolve({ ok: true, protocol: socket.getProtocol(), serial });
      socket.end();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve({ ok: false, code: error.code ?? '', message: error.message });
      socket.destroy();
    });
  });
}

/** The serial (hexadecimal, as openssl prints it) of the certificate a new connection is served. */
export async function servedSerial(port: number, ca: string): Promise<string> {
  const result = await handshake(port, ca);
  if (!result.ok) throw new Error(`TLS handshake failed: ${result.message}`);
  return result.serial;
}
