import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { parseConfig, RESERVED_PATHS } from '../../../src/config/load-config.js';
import { ERROR_CATALOGUE } from '../../../src/errors/error-codes.js';
import { buildOpenApiDocument, OPENAPI_PATH } from '../../../src/openapi/build-openapi-document.js';
import { openApiJson } from '../../../src/openapi/openapi-json.js';
import {
  createSchemaCompiler,
  DOCUMENT_FILE,
  HTTP_METHODS,
  readDocument,
  type OpenApiDocument,
} from '../../support/openapi-validator.js';

/** Every schema the document holds: components, and those inline in parameters and answers. */
function inlineSchemas(document: OpenApiDocument): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const object = value as Record<string, unknown>;
    if (typeof object.schema === 'object' && object.schema !== null)
      found.push(object.schema as Record<string, unknown>);
    for (const inner of Object.values(object)) visit(inner);
  };
  visit(document.paths);
  visit(document.components.responses);
  visit(document.components.headers);
  return found;
}

type Json = Record<string, unknown>;

/** An Error<status> component is allOf the ErrorEnvelope and what narrows it: that part. */
function narrowing(schema: Json | undefined): { properties: Record<string, Json> } {
  const allOf = schema?.allOf as [Json, Json] | undefined;
  expect(allOf?.[0]).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
  return allOf?.[1] as { properties: Record<string, Json> };
}

function errorCodes(schema: Json | undefined): string[] {
  const error = narrowing(schema).properties.error as { properties: { code: { enum: string[] } } };
  return error.properties.code.enum;
}

describe('the OpenAPI document', () => {
  it('validates against the official OpenAPI 3.1 schema', async () => {
    const document = buildOpenApiDocument() as unknown as Parameters<Validator['validate']>[0];
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('holds only schemas that ajv compiles as JSON Schema 2020-12 in strict mode', () => {
    const document = readDocument();
    const compile = createSchemaCompiler(document);
    const schemas = [...Object.values(document.components.schemas), ...inlineSchemas(document)];
    expect(schemas.length).toBeGreaterThan(30);
    for (const schema of schemas) expect(() => compile(schema)).not.toThrow();
  });

  // The document is built without a configuration (config/ may not import openapi/, nor the
  // other way round), so it retypes the defaults: this holds the two together.
  it("has the default configuration's paths: its routes', the reserved ones and forwardAuth.path", () => {
    const config = parseConfig('', 'empty.yaml');
    const expected = [
      ...config.routes.flatMap((route) => route.paths),
      ...RESERVED_PATHS,
      '/keys/{key}',
      '/keys/{key}/roll',
      config.forwardAuth.path,
      `${config.forwardAuth.path}/{path}`,
    ];
    expect(Object.keys(buildOpenApiDocument().paths ?? {}).sort()).toEqual(expected.sort());
    expect(RESERVED_PATHS).toContain(OPENAPI_PATH);
  });

  it('names each operation by an id of its own', () => {
    const ids = Object.values(readDocument().paths).flatMap((item) =>
      HTTP_METHODS.flatMap((method) => item[method]?.operationId ?? []),
    );
    expect(ids.length).toBeGreaterThan(15);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('is what docs/openapi.json holds: regenerating changes nothing', () => {
    expect(
      readFileSync(DOCUMENT_FILE, 'utf8') === openApiJson(),
      'docs/openapi.json differs from the build: run `npm run build && node dist/cli.js openapi > docs/openapi.json`',
    ).toBe(true);
  });

  it('names every error code of the catalogue, each under its own status', () => {
    const document = readDocument();
    const codes = document.components.schemas.ErrorCode as { enum: string[] };
    expect(codes.enum).toEqual(Object.keys(ERROR_CATALOGUE));
    // Answered by no operation in particular (a fault of the gateway, or the admin port): the
    // description names them.
    const unrouted = ['internal_error', 'draining'];
    const { description } = (document as unknown as { info: { description: string } }).info;
    for (const code of Object.keys(ERROR_CATALOGUE)) expect(description).toContain(`\`${code}\``);
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      if (unrouted.includes(code)) continue;
      expect(errorCodes(document.components.schemas[`Error${status}`])).toContain(code);
    }
  });

  it('gives every operation an X-Request-Id on every answer, and a challenge on every 401', () => {
    const document = readDocument();
    for (const item of Object.values(document.paths))
      for (const method of HTTP_METHODS) {
        const responses = item[method]?.responses as Record<string, Record<string, unknown>>;
        if (responses === undefined) continue;
        for (const [status, ref] of Object.entries(responses)) {
          const response =
            typeof ref.$ref === 'string'
              ? document.components.responses[ref.$ref.split('/').at(-1) ?? '']
              : ref;
          const headers = Object.keys(response?.headers ?? {});
          expect(headers).toContain('X-Request-Id');
          if (status === '401') expect(headers).toContain('WWW-Authenticate');
          if (status === '429') expect(headers).toContain('Retry-After');
        }
      }
  });

  it("types every status as an integer and the token envelope's last_id as plain null", () => {
    const { schemas } = readDocument().components;
    const statusTypes = Object.entries(schemas)
      .filter(([name]) => /^Error(\d{3}|Envelope)$/.test(name))
      .map(([name, schema]) => ({
        name,
        type: (name === 'ErrorEnvelope'
          ? (schema as { properties: Record<string, Json> })
          : narrowing(schema)
        ).properties.status?.type,
      }));
    expect(statusTypes.length).toBeGreaterThan(5);
    for (const { name, type } of statusTypes) expect(type, name).toBe('integer');
    const tokenMeta = (schemas.TokenList?.properties as Record<string, Json>).meta as Json;
    expect((tokenMeta.properties as Record<string, Json>).last_id).toMatchObject({ type: 'null' });
  });

  it("lists only invalid_credentials under the token exchange's 401", () => {
    const document = readDocument();
    const response = document.paths['/auth/token']?.post?.responses as Record<string, Json>;
    const ref = (response['401']?.content as Record<string, { schema: Json }>)['application/json']
      ?.schema.$ref as string;
    expect(errorCodes(document.components.schemas[ref.split('/').at(-1) ?? ''])).toEqual([
      'invalid_credentials',
    ]);
  });

  it('gives /keys/{key} the pattern of KeyPair.key, and ?force any string', () => {
    const document = readDocument();
    const parameters = document.paths['/keys/{key}']?.delete?.parameters as Json[];
    const schemaOf = (name: string) => parameters.find((p) => p.name === name)?.schema as Json;
    const keyPair = document.components.schemas.KeyPair?.properties as Record<string, Json>;
    expect(schemaOf('key').pattern).toBe(keyPair.key?.pattern);
    expect(schemaOf('force')).toMatchObject({ type: 'string' });
    expect(schemaOf('force').enum).toBeUndefined();
  });
});
