import { afterEach } from 'vitest';
import { headersFromLines } from './http-answer.js';
import { answerProblem } from './openapi-validator.js';

// A setup file of every test file: the answers `fetch` reads from a gateway's public port
// (test/support/gateway-process) are held to docs/openapi.json, like send's and rawRequest's.
// The body is read from a clone as it arrives, so a test that reads a stream slowly or not at
// all behaves as before; a mismatch fails the test at its end, with the answer named.

const problems: Error[] = [];
const originalFetch = globalThis.fetch;

globalThis.fetch = async (input, init) => {
  const res = await originalFetch(input, init);
  const url = new URL(input instanceof Request ? input.url : input);
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  const lines: [string, string][] = [];
  res.headers.forEach((value, name) => lines.push([name, value]));
  res
    .clone()
    .text()
    .then(
      (body) => {
        const problem = answerProblem(Number(url.port), {
          method,
          target: url.pathname + url.search,
          status: res.status,
          headers: headersFromLines(lines),
          body,
        });
        if (problem !== undefined) problems.push(problem);
      },
      // A body cut or aborted on purpose: nothing whole to check.
      () => undefined,
    );
  return res;
};

afterEach(() => {
  const [first] = problems.splice(0);
  if (first !== undefined) throw first;
});
