// The upstream every configuration forwards to: answers any request with the spec's listing
// envelope (the README's three accounts), keep-alive. Usage: node upstream.ts PORT
import { createServer } from 'node:http';

const body = JSON.stringify({
  result: 'success',
  status: 200,
  meta: { count: 3, limit: 1000, order: 'desc', last_id: 1 },
  data: [
    { id: 3, name: 'Options desk', currency: 'USD' },
    { id: 2, name: 'Savings', currency: 'EUR' },
    { id: 1, name: 'Main trading account', currency: 'USD' },
  ],
});
const headers = {
  'content-type': 'application/json',
  'content-length': String(Buffer.byteLength(body)),
};

createServer({ keepAliveTimeout: 65_000 }, (_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
}).listen(Number(process.argv[2]), '127.0.0.1');
