import { connect } from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Lower-case names; a header sent more than once is an array, in arrival order. */
  readonly headers: Record<string, string | string[]>;
  /** The body (de-chunked when the response was chunked), decoded as UTF-8. */
  readonly body: string;
  /** Every byte received, as latin1, 1xx interim responses included. */
  readonly raw: string;
}

const GIVE_UP_MS = 10_000;

/**
 * Sends `bytes` exactly as given over a fresh TCP connection and resolves with the first
 * final response: what `fetch` cannot send (duplicate header lines, absolute-form or `*`
 * targets, raw `..`, `\` or `#`, broken framing). Each character of `bytes` is one byte
 * (latin1), so `\xff` sends 0xFF. The response is complete once its Content-Length or last
 * chunk has arrived, or when the server closes the connection.
 */
export function rawRequest(port: number, bytes: string): Promise<RawResponse> {
  const isHead = bytes.startsWith('HEAD ');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (outcome: RawResponse | Error): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const attempt = (closed: boolean): void => {
      const parsed = parseResponse(received, isHead, closed);
      if (parsed !== undefined) settle(parsed);
      else if (closed)
        settle(new Error(`connection closed before a complete response:\n${raw(received)}`));
    };
    socket.setTimeout(GIVE_UP_MS, () =>
      settle(new Error(`no complete response within ${GIVE_UP_MS} ms:\n${raw(received)}`)),
    );
    socket.once('connect', () => socket.write(bytes, 'latin1'));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      attempt(false);
    });
    socket.once('end', () => attempt(true));
    // A reset right after the response (the server destroying the socket) still leaves a
    // readable answer; only a reset with nothing parseable is a failure.
    socket.once('error', (error) => {
      const parsed = parseResponse(received, isHead, true);
      settle(parsed ?? error);
    });
    socket.once('close', () => attempt(true));
  });
}

function raw(bytes: Buffer): string {
  return bytes.toString('latin1');
}

function parseResponse(bytes: Buffer, isHead: boolean, closed: boolean): RawResponse | undefined {
  let offset = 0;
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', offset);
    if (headEnd === -1) return undefined;
    const lines = bytes.subarray(offset, headEnd).toString('latin1').split('\r\n');
    const statusLine = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '');
    if (statusLine === null) throw new Error(`not an HTTP response:\n${raw(bytes)}`);
    const status = Number(statusLine[1]);
    const headers: Record<string, string | string[]> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const previous = headers[name];
      if (previous === undefined) headers[name] = value;
      else headers[name] = Array.isArray(previous) ? [...previous, value] : [previous, value];
    }
    const bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      // An interim response (100 Continue): the final one follows.
      offset = bodyStart;
      continue;
    }
    const rest = bytes.subarray(bodyStart);
    const done = (body: Buffer): RawResponse => ({
      status,
      headers,
      body: body.toString('utf8'),
      raw: raw(bytes),
    });
    if (isHead || status === 204 || status === 304) return done(Buffer.alloc(0));
    const transferEncoding = headers['transfer-encoding'];
    if (typeof transferEncoding === 'string' && /chunked/i.test(transferEncoding)) {
      const body = dechunk(rest);
      return body === undefined ? undefined : done(body);
    }
    const contentLength = headers['content-length'];
    if (typeof contentLength === 'string') {
      const length = Number(contentLength);
      return rest.length >= length ? done(rest.subarray(0, length)) : undefined;
    }
    return closed ? done(rest) : undefined;
  }
}

/** The body of a complete chunked message, or undefined while the last chunk is missing. */
function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', offset);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size:\n${raw(bytes)}`);
    const start = lineEnd + 2;
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < start + size + 2) return undefined;
    parts.push(bytes.subarray(start, start + size));
    offset = start + size + 2;
  }
}
