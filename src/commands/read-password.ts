import { createInterface } from 'node:readline';
import { MAX_SECRET_BYTES } from '../credentials/secret-hasher.js';
import { CliError, EXIT } from './cli-error.js';

const MIN_PASSWORD_CHARS = 8;

/**
 * The password comes from stdin (piped: its first line) or from a prompt that does not echo,
 * never from argv, where it would show in `ps` and shell history.
 */
export async function readPassword(
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  const password = input.isTTY ? await promptTwice(input, output) : await firstLine(input);
  if (password.length < MIN_PASSWORD_CHARS)
    throw new CliError(
      `the password must have at least ${MIN_PASSWORD_CHARS} characters`,
      EXIT.usage,
    );
  if (Buffer.byteLength(password) > MAX_SECRET_BYTES)
    throw new CliError(`the password must be at most ${MAX_SECRET_BYTES} bytes`, EXIT.usage);
  return password;
}

async function firstLine(input: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of input) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}

async function promptTwice(input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string> {
  const first = await promptHidden('Password: ', input, output);
  const second = await promptHidden('Repeat password: ', input, output);
  if (first !== second) throw new CliError('the passwords differ', EXIT.usage);
  return first;
}

function promptHidden(
  question: string,
  input: NodeJS.ReadStream,
  output: NodeJS.WriteStream,
): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input, output, terminal: true });
    // Echo nothing of what is typed; only the question itself is written.
    const writer = rl as unknown as { _writeToOutput: (text: string) => void };
    let asked = false;
    writer._writeToOutput = (text: string) => {
      if (!asked) {
        asked = true;
        output.write(text);
      }
    };
    rl.question(question, (answer) => {
      output.write('\n');
      rl.close();
      resolve(answer);
    });
  });
}
