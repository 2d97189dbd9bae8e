import { request as httpRequest, type Agent } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { headersFromLines, parseJson, type HttpAnswer } from './http-answer.js';
import { answerProblem } from './openapi-validator.js';

export interface RequestOptions {
  method?: string;
  /** An array sends one header line per value. */
  headers?: Record<string, string | string[]>;
  body?: string;
  /** The local address to connect from (any of 127.0.0.0/8 on Linux). */
  from?: string;
  /** A keep-alive agent whose connection the request goes on (instead of a fresh one). */
  agent?: Agent;
  /** For an https: URL, the CA (PEM) its certificate must chain to. */
  ca?: string;
}

export const JSON_TYPE = { 'content-type': 'application/json' };

/**
 * One request with node:http on a fresh connection (`Connection: close` unless the headers
 * say otherwise), from the chosen source address; repeated response headers stay apart.
 */
export function send(
  baseUrl: string,
  path: string,
  options: RequestOptions = {},
): Promise<HttpAnswer> {
  const url = new URL(path, baseUrl);
  const headers: Record<string, string | string[]> = {
    ...(options.agent === undefined ? { connection: 'close' } : {}),
    ...options.headers,
  };
  if (options.body !== undefined && headers['content-length'] === undefined)
    headers['content-length'] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const req = (secure ? httpsRequest : httpRequest)(
      {
        ...(secure && options.ca !== undefined ? { ca: options.ca } : {}),
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? 'GET',
        headers,
        // A fresh connection each time, never one an earlier answer left open, unless the
        // caller keeps one alive on purpose.
        agent: options.agent ?? false,
        ...(options.from === undefined ? {} : { localAddress: options.from }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const lines: [string, string][] = [];
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
            lines.push([res.rawHeaders[i] ?? '', res.rawHeaders[i + 1] ?? '']);
          const answer = {
            status: res.statusCode ?? 0,
            headers: headersFromLines(lines),
            body,
            json: parseJson(body),
          };
          const problem = answerProblem(Number(url.port), {
            method: options.method ?? 'GET',
            target: url.pathname + url.search,
            ...answer,
          });
          if (problem !== undefined) return reject(problem);
          resolve(answer);
        });
      },
    );
    // A gateway may answer (413) and close before the whole body is taken: keep the answer.
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Exchanges a password for a token; fails the test unless the gateway answers 200. */
export async function issueToken(
  baseUrl: string,
  username: string,
  password: string,
  from?: string,
): Promise<string> {
  const res = await send(baseUrl, '/auth/token', {
    method: 'POST',
    headers: JSON_TYPE,
    body: JSON.stringify({ username, password }),
    ...(from === undefined ? {} : { from }),
  });
  if (res.status !== 200) throw new Error(`token exchange answered ${res.status}: ${res.body}`);
  const { data } = res.json as { data: [{ access_token: string }] };
  return data[0].access_token;
}
