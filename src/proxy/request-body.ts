import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable } from 'node:stream';

/**
 * How a request's body goes upstream: decided by the gateway from the client's framing
 * (RFC 9112 §6.3), never left to the engine. Left to them, http-proxy-3 sends
 * `content-length: 0` on a DELETE whose body it still pipes, and node:http's client sends a
 * DELETE body with no framing at all: either way the upstream reads the body as a second
 * request, one that passed none of the gateway's checks.
 */
export type RequestBody =
  /** Nothing follows the head. */
  | { readonly kind: 'none' }
  /** The client's Content-Length: streamed as it arrives, under that same length. */
  | { readonly kind: 'length'; readonly length: number }
  /**
   * A chunked body that ended within the buffer: sent whole, with its length, so that
   * upstreams that cannot read a chunked request (Python's http.server) get it, as nginx's
   * request buffering does.
   */
  | { readonly kind: 'whole'; readonly bytes: Buffer }
  /** A chunked body larger than the buffer: what was read, then the rest, sent chunked. */
  | { readonly kind: 'chunked'; readonly stream: Readable };

export const NO_BODY: RequestBody = { kind: 'none' };

/**
 * The body's framing upstream: at once from the head, or once a chunked body has ended or
 * outgrown `bufferBytes`; undefined when the client went away first. Transfer-Encoding other
 * than `chunked` and bodies on GET or HEAD were refused before this (http/check-framing).
 */
export function frameRequestBody(
  req: IncomingMessage,
  bufferBytes: number,
): RequestBody | Promise<RequestBody | undefined> {
  if (req.headers['transfer-encoding'] !== undefined) return readChunked(req, bufferBytes);
  const length = req.headers['content-length'];
  // Node's parser let through only one Content-Length, of digits.
  if (length === undefined || length === '0') return NO_BODY;
  const bytes = Number(length);
  return bytes === 0 ? NO_BODY : { kind: 'length', length: bytes };
}

function readChunked(req: IncomingMessage, bufferBytes: number): Promise<RequestBody | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (body: RequestBody | undefined): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      resolve(body);
    };
    function onData(chunk: Buffer): void {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= bufferBytes) return;
      req.pause();
      const stream = new PassThrough();
      for (const read of chunks) stream.write(read);
      settle({ kind: 'chunked', stream });
      req.pipe(stream);
    }
    function onEnd(): void {
      settle({ kind: 'whole', bytes: Buffer.concat(chunks, size) });
    }
    // Cut before its end (or past server.requestTimeoutMs, answered 408 by the server).
    function onClose(): void {
      settle(undefined);
    }
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
  });
}

/** The bytes of a whole body as a stream, for an engine that pipes one. */
export function replayBytes(bytes: Buffer): Readable {
  return Readable.from([bytes], { objectMode: false });
}
