import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { KeyEventView } from '../../../src/credentials/audit-log.js';
import { EXPIRY_MESSAGES, parseRfc3339 } from '../../../src/credentials/key-expiry.js';
import { ROLL_MESSAGES } from '../../../src/credentials/key-roll.js';
import { LABEL, type KeyView } from '../../../src/credentials/key-view.js';
import { CREATE_KEY_MESSAGES, SCOPES_MESSAGE } from '../../../src/errors/gateway-error.js';
import type { ErrorEnvelopeBody } from '../../../src/errors/error-envelope.js';
import {
  createKeySchema,
  LOGIN_MESSAGES,
  loginSchema,
  rollKeySchema,
  type errorEnvelopeSchema,
  type KeyEventBody,
  type KeyViewBody,
} from '../../../src/openapi/api-schemas.js';
import { buildOpenApiDocument } from '../../../src/openapi/build-openapi-document.js';
import { USERNAME } from '../../../src/identity/identity-formats.js';
import { createSchemaCompiler, type OpenApiDocument } from '../../support/openapi-validator.js';

describe('LOGIN_MESSAGES', () => {
  it('states the username rule the token endpoint checks', () => {
    expect(LOGIN_MESSAGES.username).toContain(USERNAME.rule);
  });
});

/** The sentence the endpoint answers with: the first issue's. */
function firstMessage(
  schema: typeof loginSchema | typeof createKeySchema | typeof rollKeySchema,
  body: unknown,
) {
  const parsed = schema.safeParse(body);
  return parsed.success ? 'valid' : parsed.error.issues[0]?.message;
}

describe('the request body schemas', () => {
  it.each([
    [undefined, LOGIN_MESSAGES.body],
    [[], LOGIN_MESSAGES.body],
    [{ password: 'p' }, LOGIN_MESSAGES.usernameMissing],
    [{ username: 'a b', password: 'p' }, LOGIN_MESSAGES.username],
    [{ username: 7 }, LOGIN_MESSAGES.username],
    [{ username: 'alice' }, LOGIN_MESSAGES.passwordMissing],
    [{ username: 'alice', password: '' }, LOGIN_MESSAGES.password],
    [{ username: 'alice', password: 'p'.repeat(1025) }, LOGIN_MESSAGES.password],
    [{ username: 'alice', password: 'p', extra: true }, 'valid'],
  ])('refuses the login %j first with its fixed sentence', (body, message) => {
    expect(firstMessage(loginSchema, body)).toBe(message);
  });

  it.each([
    [null, CREATE_KEY_MESSAGES.body],
    ['label', CREATE_KEY_MESSAGES.body],
    [{ label: 'a\u0007' }, CREATE_KEY_MESSAGES.label],
    [{ label: 'x'.repeat(201), scopes: 'a' }, CREATE_KEY_MESSAGES.label],
    [{ expires_in: 1.5 }, EXPIRY_MESSAGES.expiresIn],
    [{ expires_in: 0 }, EXPIRY_MESSAGES.expiresIn],
    [{ expires_at: 5 }, EXPIRY_MESSAGES.expiresAt],
    [{ scopes: ['a', 'a'] }, SCOPES_MESSAGE],
    [{ scopes: ['a b'] }, SCOPES_MESSAGE],
    [{ scopes: Array.from({ length: 65 }, (_, i) => `s${i}`) }, SCOPES_MESSAGE],
    [{ label: 'ok', expires_in: 60, scopes: ['a'] }, 'valid'],
  ])('refuses the new pair %j first with its fixed sentence', (body, message) => {
    expect(firstMessage(createKeySchema, body)).toBe(message);
  });

  it.each([
    [null, ROLL_MESSAGES.body],
    [[], ROLL_MESSAGES.body],
    [3600, ROLL_MESSAGES.body],
    [{ overlap_sec: -1 }, ROLL_MESSAGES.overlap],
    [{ overlap_sec: 86_401 }, ROLL_MESSAGES.overlap],
    [{ overlap_sec: 1.5 }, ROLL_MESSAGES.overlap],
    [{ overlap_sec: '60' }, ROLL_MESSAGES.overlap],
    [{ overlap_sec: null }, ROLL_MESSAGES.overlap],
    [{}, 'valid'],
    [{ overlap_sec: 0 }, 'valid'],
    [{ overlap_sec: 86_400 }, 'valid'],
  ])('refuses the roll %j first with its fixed sentence', (body, message) => {
    expect(firstMessage(rollKeySchema, body)).toBe(message);
  });
});

/** The document's CreateKeyPair schema, as a client validating with the document holds it. */
function documentCreateKey() {
  const document = buildOpenApiDocument() as unknown as OpenApiDocument;
  return createSchemaCompiler(document)({ $ref: '#/components/schemas/CreateKeyPair' });
}

describe("the document's CreateKeyPair", () => {
  it.each<[{ scopes?: string[]; expires_at?: string }, boolean]>([
    [{ scopes: ['a', 'a'] }, false],
    [{ scopes: ['a', 'b'] }, true],
    [{ expires_at: '2030-01-31 12:00:00Z' }, false],
    [{ expires_at: '2030-01-31T12:00:00' }, false],
    [{ expires_at: '2030-01-31T12:00:00Z' }, true],
    [{ expires_at: '2030-01-31t12:00:00.5+01:00' }, true],
  ])('holds %j valid: %s, as the gateway does', (body, valid) => {
    expect(documentCreateKey()(body)).toBe(valid);
    const gateway =
      createKeySchema.safeParse(body).success &&
      (body.expires_at === undefined || parseRfc3339(body.expires_at) !== undefined);
    expect(gateway).toBe(valid);
  });
});

describe('a label', () => {
  const EMOJI = '\u{1F511}';

  it('is accepted up to 200 code points, however many UTF-16 units they take', () => {
    expect(firstMessage(createKeySchema, { label: EMOJI.repeat(200) })).toBe('valid');
    expect(firstMessage(createKeySchema, { label: EMOJI.repeat(201) })).toBe(
      CREATE_KEY_MESSAGES.label,
    );
    expect(firstMessage(createKeySchema, { label: 'x'.repeat(201) })).toBe(
      CREATE_KEY_MESSAGES.label,
    );
  });

  it.each([
    ['a lone high surrogate', 'a\ud800b'],
    ['a lone low surrogate', 'a\udc00b'],
    ['a C0 control', 'a\u0007b'],
    ['DEL', 'a\u007fb'],
    ['a C1 control (NEL)', 'a\u0085b'],
    ['a C1 control (CSI)', 'a\u009bb'],
    ['a bidi override', 'a\u202eb'],
    ['a bidi embedding', 'a\u202ab'],
    ['a bidi isolate', 'a\u2066b'],
    ['a bidi isolate end', 'a\u2069b'],
  ])('is refused with %s in it', (_, label) => {
    expect(firstMessage(createKeySchema, { label })).toBe(CREATE_KEY_MESSAGES.label);
  });

  it('is judged alike by the gateway and by the document a client validates with', () => {
    const validate = documentCreateKey();
    const chars = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 210 }),
      fc.string({ unit: 'binary', maxLength: 210 }),
      fc.string({
        unit: fc.constantFrom('a', '\u{1F511}', '\u0085', '\u202e', '\ud800', '\udc00'),
      }),
    );
    fc.assert(
      fc.property(chars, (label) => {
        expect(validate({ label })).toBe(LABEL.pattern.test(label));
      }),
    );
  });
});

// The builders outside openapi/ keep their own types (credentials' keyView, errors' errorBody):
// `npm run check` type-checks this file, so either drifting from its schema fails it.
describe("the response builders' types", () => {
  it('are the types of the schemas the document is built from', () => {
    expectTypeOf<KeyView>().toEqualTypeOf<KeyViewBody>();
    expectTypeOf<KeyEventView>().toEqualTypeOf<KeyEventBody>();
    expectTypeOf<ErrorEnvelopeBody>().toEqualTypeOf<z.input<typeof errorEnvelopeSchema>>();
  });
});
