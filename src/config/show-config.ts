import { z } from 'zod';
import { Document, isScalar, visit } from 'yaml';
import { configSchema, secretSettings, type GatewayConfig } from './config-schema.js';

/** What stands for a hidden secret: the logger's censor, so both read alike. */
export const REDACTED = '[redacted]';

/**
 * The configuration as `accounts-gateway config` prints it: every setting the gateway runs
 * with (defaults filled in, `${ENV}` and overrides applied), each secret of the schema
 * (`secretSettings`) hidden. YAML opens with a comment naming the file; JSON is the bare
 * object, for `jq`.
 */
export function showConfig(config: GatewayConfig, format: 'yaml' | 'json', file: string): string {
  const shown = redact(configSchema, config);
  if (format === 'json') return `${JSON.stringify(shown, null, 2)}\n`;
  const document = new Document(shown);
  // A short list of plain values on one line, as the files spell them (`methods: [GET, HEAD]`);
  // a long one a value a line rather than wrapped.
  visit(document, {
    Seq(_key, node) {
      const values = node.items.map((item) => (isScalar(item) ? String(item.value) : undefined));
      if (values.every((value) => value !== undefined) && values.join(', ').length <= 60)
        node.flow = true;
    },
  });
  return (
    `# The configuration in effect: ${file} with the defaults, \${ENV} and overrides applied;\n` +
    `# secrets shown as ${REDACTED}.\n` +
    document.toString({ flowCollectionPadding: false })
  );
}

/** The value with every secret setting in it hidden, read along the schema that made it. */
export function redact(schema: z.ZodType, value: unknown): unknown {
  let inner = schema;
  for (;;) {
    const mark = secretSettings.get(inner);
    if (mark !== undefined && typeof value === 'string')
      return mark.redact === 'value' ? REDACTED : redactUrl(value);
    const next = wrapped(inner);
    if (next === undefined) break;
    inner = next;
  }
  if (inner instanceof z.ZodObject && isMapping(value)) {
    const shape = inner.shape as Record<string, z.ZodType | undefined>;
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => {
        const child = shape[key];
        return [key, child === undefined ? v : redact(child, v)];
      }),
    );
  }
  if (inner instanceof z.ZodArray && Array.isArray(value))
    return value.map((v: unknown) => redact(inner.element as z.ZodType, v));
  if (inner instanceof z.ZodRecord && isMapping(value))
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [key, redact(inner.valueType as z.ZodType, v)]),
    );
  return value;
}

/** The schema a wrapper (optional, default, prefault, a preprocess's pipe) validates with. */
function wrapped(schema: z.ZodType): z.ZodType | undefined {
  if (
    schema instanceof z.ZodOptional ||
    schema instanceof z.ZodDefault ||
    schema instanceof z.ZodPrefault
  )
    return schema.unwrap() as z.ZodType;
  if (schema instanceof z.ZodPipe) return schema.out as z.ZodType;
  return undefined;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A URL with its userinfo (the whole of it: a token often rides as the user name) and the
 * value of each query parameter hidden; a fragment goes too. The rest stays as written, not
 * as a URL parser would respell it. A string that is no `scheme://` URL (`builtin`) is kept.
 */
export function redactUrl(url: string): string {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/s.exec(url);
  if (match === null) return url;
  const [, scheme = '', authority = '', path = '', query, fragment] = match;
  const at = authority.lastIndexOf('@');
  const host = at === -1 ? authority : `${REDACTED}@${authority.slice(at + 1)}`;
  const params =
    query === undefined
      ? ''
      : `?${query
          .slice(1)
          .split('&')
          .map((param) => {
            const eq = param.indexOf('=');
            return eq === -1 ? (param === '' ? '' : REDACTED) : `${param.slice(0, eq)}=${REDACTED}`;
          })
          .join('&')}`;
  return `${scheme}${host}${path}${params}${fragment === undefined ? '' : `#${REDACTED}`}`;
}
