/**
 * `derive` remembered per client connection for the last input it was given there. A
 * keep-alive client sends the same Authorization on every request, and the Basic cache id
 * (two SHA-256 runs, see pair-cache-key) is most of what a cache hit costs: worked
 * out once per connection and pair instead. An entry holds the last input only while the
 * connection that sent it is open (a WeakMap entry goes with its socket), and a new
 * function (a reload's new authenticator) starts empty.
 */
export function perConnection(
  derive: (input: string) => string,
): (input: string, connection: object | undefined) => string {
  const last = new WeakMap<object, { input: string; output: string }>();
  return (input, connection) => {
    if (connection === undefined) return derive(input);
    const seen = last.get(connection);
    if (seen?.input === input) return seen.output;
    const output = derive(input);
    if (seen === undefined) last.set(connection, { input, output });
    else {
      seen.input = input;
      seen.output = output;
    }
    return output;
  };
}
