import type { Server, Socket } from 'node:net';

/** RFC 8446 §5.1: the content type of a handshake record, the first byte of a ClientHello. */
const TLS_HANDSHAKE = 0x16;

/**
 * Whether a connection's first byte starts a request in plain HTTP rather than a TLS
 * record: a method is a token (RFC 9110 §9.1), and every method in use begins with a letter.
 * A TLS record starts with its content type (0x14-0x18; a ClientHello's is 0x16), an SSLv2
 * one with a byte over 0x7F: neither is a letter.
 */
export function startsPlainHttp(firstByte: number): boolean {
  return (firstByte >= 0x41 && firstByte <= 0x5a) || (firstByte >= 0x61 && firstByte <= 0x7a);
}

export interface PlainHttpOnTlsOptions {
  /** How long a connection may stay silent before its first byte: the server's headersTimeout. */
  readonly silentTimeoutMs: () => number;
  /** Answers a connection that spoke plain HTTP (its bytes still unread) and closes it. */
  readonly answer: (socket: Socket) => void;
}

/**
 * A TLS server that answers plain HTTP with an HTTP error instead of a silent close, as
 * nginx answers 400 "The plain HTTP request was sent to HTTPS port": `curl http://` to the
 * TLS port then says what is wrong. Every accepted connection waits for its first byte; a
 * TLS record then goes to the TLS server's own connection handling unchanged (the byte read
 * is handed back first), a letter to `answer`. Node's tls.Server handles connections in the
 * one 'connection' listener it registers when made: that listener is taken over, so call
 * this right after creating the server, before any other 'connection' listener is added.
 */
export function answerPlainHttpOnTls(server: Server, options: PlainHttpOnTlsOptions): void {
  // Node types listeners as Function: the TLS server's takes the accepted socket.
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  const [startTls] = handlers;
  // Another layout would mean a Node whose TLS server works otherwise: fail at start.
  if (handlers.length !== 1 || startTls === undefined)
    throw new Error(`a TLS server has ${handlers.length} connection listeners, not 1`);
  server.removeListener('connection', startTls);
  server.on('connection', (socket: Socket) => {
    // A silent connection is bounded as a silent TLS one is (the handshake timeout, which
    // starts only once TLS has the socket), by the time a request's head may take.
    const silent = (): void => {
      socket.destroy();
    };
    const reset = (): void => {
      socket.destroy();
    };
    socket.setTimeout(options.silentTimeoutMs(), silent);
    socket.on('error', reset);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.setTimeout(0);
      socket.off('timeout', silent);
      // Handed back: TLS reads what the socket holds before reading on (Node's initRead).
      socket.unshift(chunk);
      if (startsPlainHttp(chunk[0] ?? TLS_HANDSHAKE)) {
        options.answer(socket);
        return;
      }
      socket.off('error', reset);
      startTls.call(server, socket);
    });
  });
}
