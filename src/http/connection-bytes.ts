import type { Socket } from 'node:net';

/**
 * The connection's byte counters when its previous response ended: a request's bytes are
 * the difference (nginx's $request_length and $bytes_sent), one object per connection.
 */
const BYTES_MARK = Symbol('accounts-gateway.bytes-mark');
type MarkedSocket = Socket & { [BYTES_MARK]?: { read: number; written: number } };

/** The bytes read and written since the connection's previous exchange; the mark moves on. */
export interface ExchangeBytes {
  bytesIn: number;
  bytesOut: number;
}

/**
 * Fills `into` with the bytes on `socket` since its previous exchange and moves the mark to
 * now. Into a caller's object: the request context is one already, so the hot path makes none.
 */
export function takeExchangeBytes(socket: Socket, into: ExchangeBytes): void {
  const marked = socket as MarkedSocket;
  const mark = (marked[BYTES_MARK] ??= { read: 0, written: 0 });
  const { bytesRead, bytesWritten } = marked;
  into.bytesIn = bytesRead - mark.read;
  into.bytesOut = bytesWritten - mark.written;
  mark.read = bytesRead;
  mark.written = bytesWritten;
}
