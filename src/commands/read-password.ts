import { createInterface } from 'node:readline';
import { MAX_SECRET_BYTES } from '../credentials/secret-hasher.js';
import { CliError, EXIT } from './cli-error.js';

const MIN_PASSWORD_CHARS = 8;

/** What the messages call the value read: a user's password, or a pair's secret. */
export type PasswordNoun = 'password' | 'secret';

/**
 * The password comes from stdin (piped: its first line) or from a prompt that does not echo,
 * never from argv, where it would show in `ps` and shell history.
 */
export async function readPassword(
  noun: PasswordNoun = 'password',
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  const password = input.isTTY ? await promptTwice(noun, input, output) : await firstLine(input);
  // Nothing at all is not a short password: the input ended before one was given.
  if (password === '') throw new CliError(`no ${noun} given`, EXIT.usage);
  if (password.length < MIN_PASSWORD_CHARS)
    throw new CliError(
      `the ${noun} must have at least ${MIN_PASSWORD_CHARS} characters`,
      EXIT.usage,
    );
  if (Buffer.byteLength(password) > MAX_SECRET_BYTES)
    throw new CliError(`the ${noun} must be at most ${MAX_SECRET_BYTES} bytes`, EXIT.usage);
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

async function promptTwice(
  noun: PasswordNoun,
  input: NodeJS.ReadStream,
  output: NodeJS.WriteStream,
): Promise<string> {
  const capitalized = `${noun.charAt(0).toUpperCase()}${noun.slice(1)}`;
  const first = await promptHidden(`${capitalized}: `, noun, input, output);
  const second = await promptHidden(`Repeat ${noun}: `, noun, input, output);
  if (first !== second) throw new CliError(`the ${noun}s differ`, EXIT.usage);
  return first;
}

/**
 * One answer typed without echo. Readline puts the terminal in raw mode, where Ctrl-C is a
 * key rather than SIGINT and Ctrl-D on an empty line closes the interface: both must settle
 * the prompt, or the command would run on (or end with exit 0 and nothing printed).
 */
function promptHidden(
  question: string,
  noun: PasswordNoun,
  input: NodeJS.ReadStream,
  output: NodeJS.WriteStream,
): Promise<string> {
  return new Promise((resolve, reject) => {
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
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      // Closing leaves raw mode: echo and the terminal's own Ctrl-C come back.
      rl.close();
      output.write('\n');
      outcome();
    };
    rl.on('SIGINT', () => settle(() => reject(new CliError('cancelled', EXIT.cancelled))));
    rl.on('close', () => settle(() => reject(new CliError(`no ${noun} given`, EXIT.usage))));
    rl.question(question, (answer) => settle(() => resolve(answer)));
  });
}
