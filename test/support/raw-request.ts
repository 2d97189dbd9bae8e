import { connect } from 'node:net';
import { headersFromLines, parseJson, type HttpAnswer } from './http-answer.js';
import { answerProblem } from './openapi-validator.js';

/** An answer read off the socket, with what only a socket can tell. */
export interface RawAnswer extends HttpAnswer {
  /** Every byte received, as latin1, 1xx interim responses included. */
  readonly raw: string;
  /**
   * Whether the final response arrived whole, as its framing says (Content-Length, the
   * last chunk, or the end of the connection). When it did not, `body` is what arrived.
   */
  readonly complete: boolean;
  /** Whether the server ended the connection before the call let go of it. */
  readonly closedByServer: boolean;
}

export interface RawRequestOptions {
  /** The local address to connect from (any of 127.0.0.0/8 on Linux). */
  from?: string;
  /**
   * A body to send after the head in `bytes` once, and only if, the server answers
   * `100 Continue` (the head carries `Expect: 100-continue`).
   */
  continueBody?: string;
  /**
   * Wait for the server to end the connection rather than for the response to be complete,
   * and resolve either way: with `closedByServer: false` when `giveUpMs` passes first.
   */
  untilClosed?: boolean;
  /** Default 10 s; without `untilClosed`, a response not complete by then fails the call. */
  giveUpMs?: number;
}

const GIVE_UP_MS = 10_000;

/**
 * Sends `bytes` exactly as given over a fresh TCP connection to 127.0.0.1 and resolves with
 * the first final response: what `fetch` cannot send (duplicate header lines, absolute-form
 * or `*` targets, raw `..`, `\` or `#`, hop-by-hop headers, broken framing). Each character
 * of `bytes` is one byte (latin1), so `\xff` sends 0xFF. Without `untilClosed` it resolves
 * once the response is complete, and fails when the server closes before that.
 */
export function rawRequest(
  port: number,
  bytes: string,
  options: RawRequestOptions = {},
): Promise<RawAnswer> {
  const isHead = bytes.startsWith('HEAD ');
  const giveUpMs = options.giveUpMs ?? GIVE_UP_MS;
  return new Promise((resolve, reject) => {
    const socket = connect({
      port,
      host: '127.0.0.1',
      ...(options.from === undefined ? {} : { localAddress: options.from }),
    });
    let received = Buffer.alloc(0);
    let continueBody = options.continueBody;
    let settled = false;
    const settle = (outcome: RawAnswer | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const problem = outcome instanceof Error ? outcome : rawAnswerProblem(port, bytes, outcome);
      if (problem !== undefined) reject(problem);
      else resolve(outcome as RawAnswer);
    };
    /** Runs `step`; a response that cannot be parsed fails the call. */
    const guard = (step: () => void): void => {
      try {
        step();
      } catch (error) {
        settle(error instanceof Error ? error : new Error(String(error)));
      }
    };
    const onClosed = (error?: Error): void => {
      const parsed = parseResponse(received, isHead, true);
      if (parsed !== undefined && (parsed.complete || options.untilClosed === true))
        settle({ ...parsed, raw: latin1(received), closedByServer: true });
      else
        settle(
          error ?? new Error(`connection closed before a complete response:\n${latin1(received)}`),
        );
    };
    const timer = setTimeout(
      () =>
        guard(() => {
          const parsed = parseResponse(received, isHead, false);
          if (options.untilClosed === true && parsed !== undefined)
            settle({ ...parsed, raw: latin1(received), closedByServer: false });
          else
            settle(new Error(`no complete response within ${giveUpMs} ms:\n${latin1(received)}`));
        }),
      giveUpMs,
    );
    socket.once('connect', () => socket.write(bytes, 'latin1'));
    socket.on('data', (chunk: Buffer) =>
      guard(() => {
        received = Buffer.concat([received, chunk]);
        if (continueBody !== undefined && /^HTTP\/1\.1 100 [^\r]*\r\n\r\n/.test(latin1(received))) {
          socket.write(continueBody, 'latin1');
          continueBody = undefined;
        }
        if (options.untilClosed === true) return;
        const parsed = parseResponse(received, isHead, false);
        if (parsed?.complete === true)
          settle({ ...parsed, raw: latin1(received), closedByServer: false });
      }),
    );
    socket.once('end', () => guard(() => onClosed()));
    // A reset right after the response (the server destroying the socket) still leaves a
    // readable answer; only a reset with nothing usable is a failure.
    socket.once('error', (error) => guard(() => onClosed(error)));
    socket.once('close', () => guard(() => onClosed()));
  });
}

/** A whole answer of a gateway's public port, to the first request line sent, as documented. */
function rawAnswerProblem(port: number, bytes: string, answer: RawAnswer): Error | undefined {
  const line = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/.exec(bytes);
  if (line === null || !answer.complete) return undefined;
  return answerProblem(port, { method: line[1] ?? '', target: line[2] ?? '', ...answer });
}

function latin1(bytes: Buffer): string {
  return bytes.toString('latin1');
}

type Parsed = Omit<RawAnswer, 'raw' | 'closedByServer'>;

/**
 * The status of every final response in `raw` (a RawAnswer's), in order, 1xx interim ones
 * left out: what tells that a request got exactly one answer. `raw` must hold whole responses.
 */
export function finalStatuses(raw: string, isHead = false): number[] {
  const bytes = Buffer.from(raw, 'latin1');
  const statuses: number[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const parsed = parseResponse(bytes, isHead, true, offset);
    if (parsed === undefined || !parsed.complete) throw new Error(`not a whole response:\n${raw}`);
    statuses.push(parsed.status);
    offset = parsed.end;
  }
  return statuses;
}

/** The first final response in `bytes` from `start`, or undefined while its head is incomplete. */
function parseResponse(
  bytes: Buffer,
  isHead: boolean,
  closed: boolean,
  start = 0,
): (Parsed & { readonly end: number }) | undefined {
  let offset = start;
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', offset);
    if (headEnd === -1) return undefined;
    const lines = bytes.subarray(offset, headEnd).toString('latin1').split('\r\n');
    const statusLine = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '');
    if (statusLine === null) throw new Error(`not an HTTP response:\n${latin1(bytes)}`);
    const status = Number(statusLine[1]);
    const headers = headersFromLines(
      lines.slice(1).map((line) => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()] as const;
      }),
    );
    const bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      // An interim response (100 Continue): the final one follows.
      offset = bodyStart;
      continue;
    }
    const rest = bytes.subarray(bodyStart);
    const done = (body: Buffer, complete: boolean, used: number) => {
      const text = body.toString('utf8');
      return {
        status,
        headers,
        body: text,
        json: parseJson(text),
        complete,
        end: bodyStart + used,
      };
    };
    if (isHead || status === 204 || status === 304) return done(Buffer.alloc(0), true, 0);
    const transferEncoding = headers['transfer-encoding'];
    if (typeof transferEncoding === 'string' && /chunked/i.test(transferEncoding)) {
      const { body, complete, used } = dechunk(rest);
      return done(body, complete, used);
    }
    const contentLength = headers['content-length'];
    if (typeof contentLength === 'string') {
      const length = Number(contentLength);
      return done(rest.subarray(0, length), rest.length >= length, Math.min(length, rest.length));
    }
    return done(rest, closed, rest.length);
  }
}

/** The chunks that arrived whole, complete once the last (empty) chunk has; `used`: bytes read. */
function dechunk(bytes: Buffer): { body: Buffer; complete: boolean; used: number } {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', offset);
    if (lineEnd === -1) return { body: Buffer.concat(parts), complete: false, used: offset };
    const size = Number.parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size:\n${latin1(bytes)}`);
    const start = lineEnd + 2;
    // The last chunk, and the empty trailer section after it.
    if (size === 0) return { body: Buffer.concat(parts), complete: true, used: start + 2 };
    if (bytes.length < start + size + 2)
      return { body: Buffer.concat(parts), complete: false, used: offset };
    parts.push(bytes.subarray(start, start + size));
    offset = start + size + 2;
  }
}
