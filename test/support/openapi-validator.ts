import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { PATH_ITEM_METHODS } from '../../src/openapi/build-openapi-document.js';

/** docs/openapi.json: the document the gateway serves and the end-to-end answers are held to. */
export const DOCUMENT_FILE = new URL('../../docs/openapi.json', import.meta.url);

/** The header the test upstreams add: what they answer is theirs, not the gateway's. */
export const TEST_UPSTREAM_HEADER = 'x-test-upstream';

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  readonly paths: Record<string, Record<string, Json>>;
  readonly components: {
    schemas: Record<string, Json>;
    responses: Record<string, Json>;
    headers: Record<string, Json>;
  };
}

export interface ObservedResponse {
  readonly method: string;
  /** The request target as sent (path and query). */
  readonly target: string;
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  readonly body: string;
}

/** What the document says of one answer: its operation and status, or why it says nothing. */
export type Verdict =
  | {
      readonly kind: 'checked';
      readonly path: string;
      readonly method: string;
      /** `default`: the operation's catch-all answer (the upstream's, passed through). */
      readonly status: number | 'default';
    }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'failed'; readonly message: string };

/**
 * Answered by a fault of the gateway, by no operation in particular: the document's
 * description says so rather than every operation (no test can make the gateway fail).
 */
const UNROUTED: ReadonlySet<number> = new Set([500]);

/** Every method a path item can name, as the document's builder lists them. */
export const HTTP_METHODS = PATH_ITEM_METHODS;

// ajv-formats ships CommonJS: its default export is the module object under some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => void;

/**
 * A JSON Schema 2020-12 validator of every schema of the document, strict: a schema ajv
 * cannot read fails here, not silently later. `#/components/schemas/X` becomes `urn:schema:X`.
 */
export function createSchemaCompiler(
  document: OpenApiDocument,
): (schema: Json) => ValidateFunction {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  // OpenAPI 3.1's dialect adds these annotations to JSON Schema.
  for (const keyword of ['example', 'discriminator', 'xml', 'externalDocs'])
    ajv.addKeyword({ keyword });
  for (const [name, schema] of Object.entries(document.components.schemas))
    ajv.addSchema(rewriteRefs(schema) as Json, `urn:schema:${name}`);
  return (schema) => ajv.compile(rewriteRefs(schema) as Json);
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, inner]) => [
      name,
      name === '$ref' && typeof inner === 'string'
        ? inner.replace('#/components/schemas/', 'urn:schema:')
        : rewriteRefs(inner),
    ]),
  );
}

export function readDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as OpenApiDocument;
}

/** `/keys/{key}` -> a pattern of one path segment per parameter. */
function pathPattern(template: string): RegExp {
  const escaped = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`);
}

/**
 * Checks answers against the document: the status is documented for the path and method,
 * every required header is there and each documented one matches its schema, and the body
 * matches the status's schema (none when it documents none). Paths the document does not
 * describe are skipped. A method the document says a path does not take (an operation with
 * no 2xx, 3xx or default answer) may be taken by a test's own routes: an answer the operation
 * does not list is then held only to ErrorEnvelope when it is an error. An answer of a test
 * upstream (TEST_UPSTREAM_HEADER) is held only to the headers the gateway adds to every answer.
 */
export function createResponseValidator(
  document: OpenApiDocument,
): (o: ObservedResponse) => Verdict {
  const compile = createSchemaCompiler(document);
  const compiled = new Map<object, ValidateFunction>();
  const validatorOf = (schema: Json): ValidateFunction => {
    let validate = compiled.get(schema);
    if (validate === undefined) {
      validate = compile(schema);
      compiled.set(schema, validate);
    }
    return validate;
  };
  const templates = Object.keys(document.paths).map((path) => ({
    path,
    pattern: pathPattern(path),
  }));
  const deref = (value: Json, kind: 'responses' | 'headers'): Json => {
    const ref = value.$ref;
    if (typeof ref !== 'string') return value;
    const name = ref.slice(`#/components/${kind}/`.length);
    const target = document.components[kind][name];
    if (target === undefined) throw new Error(`unresolved ${ref}`);
    return target;
  };

  /** The error envelope's problems, when the body is one (or must be one: `always`). */
  const envelopeProblems = (observed: ObservedResponse, always: boolean): string[] => {
    const json = parse(observed.body);
    if (observed.method.toUpperCase() === 'HEAD' || (!always && !isErrorEnvelope(json))) return [];
    const validate = validatorOf(document.components.schemas.ErrorEnvelope ?? {});
    return validate(json) ? [] : [`body: ${describe(validate)}`];
  };

  /** What of a documented answer's headers and body does not match the document. */
  const responseProblems = (
    response: Json,
    observed: ObservedResponse,
    passedThrough: boolean,
  ): string[] => {
    const problems: string[] = [];
    for (const [name, value] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
      const header = deref(value, 'headers');
      const got = observed.headers[name.toLowerCase()];
      if (got === undefined) {
        if (header.required === true) problems.push(`header ${name} is missing`);
        continue;
      }
      const validate = validatorOf(header.schema as Json);
      for (const line of typeof got === 'string' ? [got] : got)
        if (!validate(line)) problems.push(`header ${name}: ${describe(validate)}`);
    }
    if (observed.method.toUpperCase() === 'HEAD' || observed.status === 304 || passedThrough)
      return problems;
    const content = response.content as Record<string, { schema: Json }> | undefined;
    const schema = content?.['application/json']?.schema;
    if (schema === undefined) {
      if (observed.body !== '') problems.push('a body where the document says none');
      return problems;
    }
    const json = parse(observed.body);
    const validate = validatorOf(schema);
    if (json === undefined) problems.push('the body is not JSON');
    else if (!validate(json)) problems.push(`body: ${describe(validate)}`);
    return problems;
  };

  return (observed) => {
    const path = observed.target.split('?')[0] ?? '';
    const template = templates.find((t) => t.pattern.test(path))?.path;
    if (template === undefined) return { kind: 'skipped' };
    const method = observed.method.toLowerCase();
    const where = `${observed.method} ${observed.target} answered ${observed.status}`;
    const verdict = (problems: string[], checked?: Verdict): Verdict =>
      problems.length === 0
        ? (checked ?? { kind: 'skipped' })
        : {
            kind: 'failed',
            message: `OpenAPI (docs/openapi.json): ${where}: ${problems.join('; ')}\nbody: ${observed.body.slice(0, 500)}`,
          };
    const base = observed.headers['x-request-id'] === undefined ? ['no X-Request-Id header'] : [];
    if (observed.headers[TEST_UPSTREAM_HEADER] !== undefined) return verdict(base);
    const operation = document.paths[template]?.[method];
    if (operation === undefined) return verdict([...base, ...envelopeProblems(observed, false)]);
    const responses = operation.responses as Record<string, Json>;
    // `default`: the upstream's answer passed through, held to its headers only.
    const passedThrough =
      responses[String(observed.status)] === undefined && responses.default !== undefined;
    const documented = responses[passedThrough ? 'default' : String(observed.status)];
    if (documented === undefined && UNROUTED.has(observed.status))
      return verdict([...base, ...envelopeProblems(observed, true)]);
    if (documented === undefined && !takesMethod(responses))
      return verdict([...base, ...envelopeProblems(observed, false)]);
    if (documented === undefined)
      return verdict([
        `status ${observed.status} is not documented for ${method.toUpperCase()} ${template} (documented: ${Object.keys(responses).join(', ')})`,
      ]);
    const problems = [
      ...base,
      ...responseProblems(deref(documented, 'responses'), observed, passedThrough),
    ];
    return verdict(problems, {
      kind: 'checked',
      path: template,
      method,
      status: passedThrough ? 'default' : observed.status,
    });
  };
}

/** Whether an operation answers anything but refusals: the path takes its method. */
function takesMethod(responses: Record<string, Json>): boolean {
  return Object.keys(responses).some((status) => /^[23]|^default$/.test(status));
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isErrorEnvelope(json: unknown): boolean {
  return typeof json === 'object' && json !== null && (json as Json).result === 'error';
}

function describe(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`)
    .join('; ');
}

let shared: ((o: ObservedResponse) => Verdict) | undefined;

/**
 * The public ports of the gateways this test file started (gateway-process.ts adds them):
 * the answers read from them (send, rawRequest, fetch) are held to the document.
 */
export const gatewayPorts = new Set<number>();

/** Every `METHOD path status` of the document an answer was checked against, in this file. */
export const exercised = new Set<string>();

/** Every `METHOD path status` the document describes. */
export function documentedAnswers(document: OpenApiDocument): Set<string> {
  const all = new Set<string>();
  for (const [path, item] of Object.entries(document.paths))
    for (const method of HTTP_METHODS)
      for (const status of Object.keys(item[method]?.responses ?? {}))
        all.add(`${method.toUpperCase()} ${path} ${status}`);
  return all;
}

/**
 * Holds an answer read from `port` to the committed document when the port is a gateway's
 * public listener: the readable error when it does not match (the caller fails the test with
 * it), and a record of what it was checked against.
 */
export function answerProblem(port: number, observed: ObservedResponse): Error | undefined {
  if (!gatewayPorts.has(port)) return undefined;
  shared ??= createResponseValidator(readDocument());
  const verdict = shared(observed);
  if (verdict.kind === 'failed') return new Error(verdict.message);
  if (verdict.kind === 'checked')
    exercised.add(`${verdict.method.toUpperCase()} ${verdict.path} ${verdict.status}`);
  return undefined;
}
