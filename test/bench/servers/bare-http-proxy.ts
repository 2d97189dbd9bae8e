// The bare http-proxy-3 engine: a keep-alive agent, no authentication, no header work.
// Usage: node bare-http-proxy.ts PORT UPSTREAM_URL
import { Agent, createServer } from 'node:http';
import { createProxyServer } from 'http-proxy-3';

const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const proxy = createProxyServer({ target: process.argv[3] ?? '', agent });
proxy.on('error', (_error, _req, res) => {
  if ('writeHead' in res && !res.headersSent) res.writeHead(502);
  res.end();
});
createServer((req, res) => proxy.web(req, res)).listen(Number(process.argv[2]), '127.0.0.1');
