import { z } from 'zod';
import { LABEL, MAX_LABEL_CHARS } from '../credentials/key-view.js';
import {
  EXPIRY_MESSAGES,
  MAX_KEY_LIFETIME_SEC,
  RFC3339_DATE_TIME,
} from '../credentials/key-expiry.js';
import { MAX_ROLL_OVERLAP_SEC, ROLL_MESSAGES } from '../credentials/key-roll.js';
import { AUDIT_ACTIONS, AUDIT_EVENT_ID } from '../credentials/audit-log.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/error-codes.js';
import { CREATE_KEY_MESSAGES, SCOPES_MESSAGE } from '../errors/gateway-error.js';
import { KEY_ID, SCOPE, USERNAME } from '../identity/identity-formats.js';
import { MAX_SCOPES } from '../identity/scopes.js';

/**
 * The public API's bodies as zod schemas: the endpoints validate requests with them, the
 * response builders take their types from them, and the OpenAPI document is built from them
 * (build-openapi-document.ts). Each refusal carries the fixed sentence the endpoint has
 * always answered with (src/errors, or its rule's module), so validating here changes no answer.
 */

/** Every error code, from the catalogue (never retyped). */
export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as [ErrorCode, ...ErrorCode[]];

export const errorEnvelopeSchema = z
  .object({
    result: z.literal('error'),
    status: z.int().min(400).max(599).meta({ description: 'Mirrors the HTTP status.' }),
    error: z.object({
      code: z.enum(ERROR_CODES).meta({
        id: 'ErrorCode',
        description: 'Stable; each code has one HTTP status (see the description of the API).',
      }),
      message: z.string().meta({ description: 'A fixed sentence; never echoes the request.' }),
    }),
    request_id: z.string().meta({ description: 'The X-Request-Id of the response.' }),
  })
  .meta({ id: 'ErrorEnvelope', description: 'Every error the gateway itself answers with.' });

/**
 * The listing envelope's `meta` (spec §2.2); `last_id` is the cursor of the next page, or
 * null: `lastId` is the schema of the whole member, null included.
 */
function metaSchema<T extends z.ZodType>(lastId: T) {
  return z.object({
    count: z.int().min(0).meta({ description: 'Number of records in data.' }),
    limit: z.int().min(1).meta({ description: 'The page size asked for (1000 by default).' }),
    order: z.enum(['desc', 'asc']),
    last_id: lastId.meta({
      description: 'The id of the last record in data; null when data is empty.',
    }),
  });
}

/** The spec's success envelope (§2.1) around `record`, the shape of every success body. */
function successEnvelope<R extends z.ZodType, L extends z.ZodType>(record: R, lastId: L) {
  return z.object({
    result: z.literal('success'),
    status: z.int().min(200).max(299).meta({ description: 'Mirrors the HTTP status.' }),
    meta: metaSchema(lastId),
    data: z.array(record),
  });
}

/** An account record (spec §2.3): an integer id; the other fields are the backend's. */
const accountSchema = z
  .looseObject({ id: z.int() })
  .meta({ id: 'Account', description: "An account; fields beyond id are the backend's." });

export const accountListSchema = successEnvelope(accountSchema, z.int().nullable()).meta({
  id: 'AccountList',
});

const timestamp = z.string().meta({ format: 'date-time' });

const keyViewSchema = z
  .object({
    id: z.string().regex(KEY_ID.pattern).meta({ description: 'The key; the paging cursor.' }),
    key: z.string().regex(KEY_ID.pattern),
    label: z.string(),
    status: z.enum(['active', 'revoked', 'expired']),
    created_at: timestamp,
    revoked_at: timestamp.exactOptional(),
    expires_at: z.union([timestamp, z.null()]),
    scopes: z.array(z.string()).readonly(),
    last_used_at: z.union([timestamp, z.null()]),
    expiring_soon: z.boolean().meta({
      description:
        'true while the pair is active and its expires_at is at most 30 days away: roll it (POST /keys/{key}/roll) before it stops working.',
    }),
  })
  .meta({ id: 'KeyPair', description: 'A key pair as its owner sees it: never its secret.' });

const createdKeySchema = keyViewSchema
  .extend({ secret: z.string().meta({ description: 'Shown once, never again.' }) })
  .meta({ id: 'CreatedKeyPair' });

/** The answer of a roll: the successor, its secret once, and the rolled pair as it is now. */
const rolledKeySchema = createdKeySchema.extend({ previous: keyViewSchema }).meta({
  id: 'RolledKeyPair',
  description:
    'The new pair, its secret shown once, and in `previous` the rolled pair as it is now: its expires_at the end of the overlap (or its own, when sooner), or revoked with no overlap.',
});

export const keyListSchema = successEnvelope(keyViewSchema, z.string().nullable()).meta({
  id: 'KeyPairList',
});
export const createdKeyListSchema = successEnvelope(createdKeySchema, z.string().nullable()).meta({
  id: 'CreatedKeyPairList',
});

export const rolledKeyListSchema = successEnvelope(rolledKeySchema, z.string().nullable()).meta({
  id: 'RolledKeyPairList',
});

/** An event of the audit trail as the holder of its subject sees it (credentials/audit-log.ts). */
const keyEventSchema = z
  .object({
    id: z
      .string()
      .regex(AUDIT_EVENT_ID)
      .meta({ description: 'The event id, `<Unix ms>-<sequence>`; the paging cursor.' }),
    at: timestamp.meta({ description: 'When the change was made.' }),
    action: z.string().meta({
      description: `What changed: ${AUDIT_ACTIONS.join(', ')} (a writer of its own may record others).`,
    }),
    actor: z.string().meta({
      description:
        'Who: key:<key id> (a Basic caller), user:<username> (a portal session or a token the gateway issued), token:<subject> (a token of another issuer), operator (the CLI), or a writer’s own.',
    }),
    via: z.string().meta({ description: 'api, portal, cli, or a writer’s own name.' }),
    from: z.string().exactOptional().meta({ description: 'The client address (api, portal).' }),
    request_id: z.string().exactOptional().meta({ description: 'The X-Request-Id of the change.' }),
    key: z.string().exactOptional().meta({ description: 'The pair made, rolled or revoked.' }),
    successor: z.string().exactOptional().meta({ description: 'A roll’s new pair.' }),
    expires_at: timestamp
      .exactOptional()
      .meta({ description: 'The expiry of the pair made (or a roll’s successor), or set.' }),
    ends_at: timestamp.exactOptional().meta({ description: 'When a rolled pair stops working.' }),
    scopes: z
      .string()
      .exactOptional()
      .meta({ description: 'The scopes of the pair or user made, space-separated.' }),
    username: z.string().exactOptional().meta({ description: 'The web-app user changed.' }),
  })
  .meta({
    id: 'KeyEvent',
    description:
      'A change of one of the subject’s pairs or users, from the audit trail: never a secret or hash.',
  });

export const keyEventListSchema = successEnvelope(keyEventSchema, z.string().nullable()).meta({
  id: 'KeyEventList',
});

const tokenSchema = z
  .object({
    access_token: z.string().meta({ description: 'A JWT (RFC 7519) for Bearer authorization.' }),
    token_type: z.literal('Bearer'),
    expires_in: z.int().min(1).meta({ description: 'Seconds the token is valid for.' }),
    expires_at: timestamp,
  })
  .meta({ id: 'Token' });

export const tokenListSchema = successEnvelope(tokenSchema, z.null()).meta({ id: 'TokenList' });

/** RFC 7517 §5: a JWK Set. Only public members are ever served. */
export const jwksSchema = z
  .object({
    keys: z.array(
      z.looseObject({
        kty: z.string(),
        kid: z.string().optional(),
        alg: z.string().optional(),
        use: z.string().optional(),
      }),
    ),
  })
  .meta({ id: 'JsonWebKeySet', description: 'RFC 7517 §5.' });

/** The longest password `POST /auth/token` reads, in characters. */
const MAX_PASSWORD_CHARS = 1024;

/**
 * `POST /auth/token` 400 bad_request: which field is missing or wrong, in fixed words (never
 * the value sent), stating the rules loginSchema checks.
 */
export const LOGIN_MESSAGES = {
  body: 'The body must be a JSON object with username and password.',
  usernameMissing: 'username is required.',
  username: `username must be a string of ${USERNAME.rule}.`,
  passwordMissing: 'password is required.',
  password: `password must be a non-empty string of at most ${MAX_PASSWORD_CHARS} characters.`,
} as const;

/** `POST /auth/token`: the web-app login, refused field by field in fixed words. */
export const loginSchema = z
  .object(
    {
      username: z
        .string({
          error: (issue) =>
            issue.input === undefined ? LOGIN_MESSAGES.usernameMissing : LOGIN_MESSAGES.username,
        })
        .regex(USERNAME.pattern, LOGIN_MESSAGES.username),
      password: z
        .string({
          error: (issue) =>
            issue.input === undefined ? LOGIN_MESSAGES.passwordMissing : LOGIN_MESSAGES.password,
        })
        .min(1, LOGIN_MESSAGES.password)
        .max(MAX_PASSWORD_CHARS, LOGIN_MESSAGES.password),
    },
    { error: LOGIN_MESSAGES.body },
  )
  .meta({ id: 'Login' });

export type Login = z.output<typeof loginSchema>;

/** `POST /keys`: everything optional; an empty body makes a pair with the defaults. */
export const createKeySchema = z
  .object(
    {
      label: z
        .string({ error: CREATE_KEY_MESSAGES.label })
        .regex(LABEL.pattern, CREATE_KEY_MESSAGES.label)
        .exactOptional()
        // The pattern bounds the length in code points; zod's .max would count UTF-16 units.
        .meta({
          maxLength: MAX_LABEL_CHARS,
          description: `At most ${MAX_LABEL_CHARS} characters (code points); no C0 or C1 control, DEL, bidi control (U+202A-U+202E, U+2066-U+2069) nor lone surrogate.`,
        }),
      expires_in: z
        .int({ error: EXPIRY_MESSAGES.expiresIn })
        .min(1, EXPIRY_MESSAGES.expiresIn)
        .max(MAX_KEY_LIFETIME_SEC, EXPIRY_MESSAGES.expiresIn)
        .exactOptional()
        .meta({ description: 'Seconds from now (not with expires_at).' }),
      // The pattern is the parser's (parseRfc3339), shown in the document only: the parser
      // answers, so a body with both expires_in and a bad expires_at keeps its answer.
      expires_at: z.string({ error: EXPIRY_MESSAGES.expiresAt }).exactOptional().meta({
        format: 'date-time',
        pattern: RFC3339_DATE_TIME.source,
        description: 'An RFC 3339 date-time with an offset, at most ten years ahead.',
      }),
      scopes: z
        .array(z.string({ error: SCOPES_MESSAGE }).regex(SCOPE.pattern, SCOPES_MESSAGE), {
          error: SCOPES_MESSAGE,
        })
        .max(MAX_SCOPES, SCOPES_MESSAGE)
        .refine((scopes) => new Set(scopes).size === scopes.length, SCOPES_MESSAGE)
        .exactOptional()
        // The document cannot show the refine: uniqueItems says it there.
        .meta({
          uniqueItems: true,
          description: "Defaults to the caller's own; never beyond them.",
        }),
    },
    { error: CREATE_KEY_MESSAGES.body },
  )
  .meta({ id: 'CreateKeyPair' });

/** `POST /keys/{key}/roll`: the overlap, or nothing (an empty body) for the default. */
export const rollKeySchema = z
  .object(
    {
      overlap_sec: z
        .int({ error: ROLL_MESSAGES.overlap })
        .min(0, ROLL_MESSAGES.overlap)
        .max(MAX_ROLL_OVERLAP_SEC, ROLL_MESSAGES.overlap)
        .exactOptional()
        .meta({
          description:
            'Seconds the rolled pair keeps working, 0 (revoked at once) to 86400; never past its own expiry. 3600 when absent.',
        }),
    },
    { error: ROLL_MESSAGES.body },
  )
  .meta({ id: 'RollKeyPair' });

export type KeyViewBody = z.input<typeof keyViewSchema>;
export type CreatedKeyBody = z.input<typeof createdKeySchema>;
export type RolledKeyBody = z.input<typeof rolledKeySchema>;
export type TokenBody = z.input<typeof tokenSchema>;
export type KeyEventBody = z.input<typeof keyEventSchema>;
