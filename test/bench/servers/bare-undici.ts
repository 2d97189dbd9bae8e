// The bare undici engine: a keep-alive Pool and one dispatch per request, the response
// written straight through; no authentication, no header work beyond hop-by-hop fields.
// Usage: node bare-undici.ts PORT UPSTREAM_URL
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { Pool, type Dispatcher } from 'undici';

const pool = new Pool(process.argv[3] ?? '', { connections: 256, pipelining: 1 });
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection'];

function handler(res: ServerResponse): Dispatcher.DispatchHandler {
  return {
    onRequestStart() {},
    onResponseStart(_controller, statusCode, headers: IncomingHttpHeaders) {
      for (const name of HOP_BY_HOP) delete headers[name];
      res.writeHead(statusCode, headers);
    },
    onResponseData(controller, chunk: Buffer) {
      if (!res.write(chunk)) {
        controller.pause();
        res.once('drain', () => controller.resume());
      }
    },
    onResponseEnd() {
      res.end();
    },
    onResponseError() {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    },
  };
}

createServer((req, res) => {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.includes(name)) headers[name] = value;
  }
  pool.dispatch(
    { method: req.method ?? 'GET', path: req.url ?? '/', headers, body: null },
    handler(res),
  );
}).listen(Number(process.argv[2]), '127.0.0.1');
