/**
 * Simple lower-case mappings that String.prototype.toLowerCase (the full mapping) does not
 * give: `İ` lowers to `i` + U+0307 there, to `i` in Java's Character.toLowerCase.
 */
const SIMPLE_LOWER: Readonly<Record<string, string>> = { '\u0130': 'i' };

/** Printable ASCII but space: what a folded character must become to count. */
const ASCII = /^[\x21-\x7e]+$/;

/** Percent-encoded bytes over 0x7F, in a row: the UTF-8 of non-ASCII characters. */
const HIGH_ESCAPES = /(?:%[89A-F][0-9A-F])+/g;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The ASCII a non-ASCII character is read as by an upstream that compares without case or
 * normalizes to NFKC, or undefined when it is read as none. Java's equalsIgnoreCase compares
 * `ı` (U+0131) equal to `i` and `I`, `ſ` (U+017F) to `s`; `K` (U+212A, Kelvin) lowers to `k`;
 * NFKC turns `ａ` (fullwidth) into `a`, `ﬁ` into `fi`; upper-casing turns `ß` into `SS`.
 */
function asciiOf(char: string): string | undefined {
  const readings = [char.toLowerCase(), char.toUpperCase(), char.normalize('NFKC')];
  const simple = SIMPLE_LOWER[char];
  if (simple !== undefined) readings.push(simple);
  for (const reading of readings) {
    const normalized = reading.normalize('NFKC');
    if (ASCII.test(normalized)) return normalized.toLowerCase();
  }
  return undefined;
}

/** How many bytes the UTF-8 sequence that `lead` starts holds; 0 for a byte that starts none. */
function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

function escapes(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return text;
}

/** A row of escapes with each well-formed character that reads as ASCII replaced by it. */
function foldEscapes(row: string): string {
  const bytes = Uint8Array.from(row.slice(1).split('%'), (hex) => Number.parseInt(hex, 16));
  let folded = '';
  for (let i = 0; i < bytes.length;) {
    const length = sequenceLength(bytes[i] ?? 0);
    const sequence = bytes.subarray(i, i + Math.max(length, 1));
    let char: string | undefined;
    if (length > 0 && sequence.length === length) {
      try {
        char = UTF8.decode(sequence);
      } catch {
        // Not UTF-8 (an overlong form, a surrogate): no character to fold; the byte stays.
      }
    }
    if (char === undefined) {
      folded += escapes(bytes.subarray(i, i + 1));
      i += 1;
    } else {
      folded += asciiOf(char) ?? escapes(sequence);
      i += length;
    }
  }
  return folded;
}

/**
 * A checked path as an upstream that reads paths without case may see it: ASCII letters in
 * lower case, and every percent-encoded UTF-8 character that case mapping or NFKC turns into
 * ASCII replaced by that ASCII, in lower case (`/accounts/adm%C4%B1n` -> `/accounts/admin`).
 * Other escapes stay as they are, upper case, the only case a checked path uses. The result
 * may hold characters a path may not (`%EF%BC%8F`, fullwidth `/`, folds to `/`): the caller
 * checks it again.
 */
export function foldPath(path: string): string {
  const decoded = path.includes('%') ? path.replace(HIGH_ESCAPES, foldEscapes) : path;
  if (!/[A-Z]/.test(decoded)) return decoded;
  return decoded.toLowerCase().replace(/%[0-9a-f]{2}/g, (escape) => escape.toUpperCase());
}
