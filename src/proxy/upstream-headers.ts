import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Identity } from '../identity/identity.js';

export interface HeaderPolicy {
  /** End-to-end request headers that may pass (lower case). Everything else is dropped. */
  readonly allow: ReadonlySet<string>;
  readonly forwardAuthorization: boolean;
}

// RFC 9110 §7.6.1 hop-by-hop fields, and what proxies must not forward besides.
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'proxy-authorization',
  'proxy-authenticate',
]);

const NEVER_ALLOWED: readonly string[] = [
  ...HOP_BY_HOP,
  // The body's framing is the gateway's: the engine sets it from the body it forwards (see
  // request-body), whatever the client's framing was.
  'content-length',
  'host',
  'authorization',
  'x-request-id',
  'forwarded',
  // The gateway's own trace context replaces the client's (see tracing/request-trace).
  'traceparent',
  'tracestate',
  // With Expect on the outgoing request http-proxy-3 skips its proxyReq event, and with it
  // the forwarder's outgoing path and 504 timer; the gateway answers 100-continue itself.
  'expect',
];
// Identity and forwarding headers are the gateway's to set; proxy-* ones (credentials,
// connection control) are meant for a proxy, never for the upstream.
const NEVER_ALLOWED_PREFIXES: readonly string[] = ['x-auth-', 'x-forwarded-', 'proxy-'];

export function createHeaderPolicy(options: {
  allowHeaders: readonly string[];
  forwardAuthorization: boolean;
}): HeaderPolicy {
  const allow = new Set(options.allowHeaders.map((h) => h.toLowerCase()));
  // These are set by the gateway or never forwarded, whatever the allow-list says. `_` counts
  // as `-`: CGI-style upstreams (PHP's HTTP_X_AUTH_SUBJECT, Django's META, WSGI) map both to
  // one name, so a client's X_Auth_Subject would read as the gateway's X-Auth-Subject there.
  for (const name of allow) {
    const hyphenated = name.replaceAll('_', '-');
    if (
      NEVER_ALLOWED.includes(hyphenated) ||
      NEVER_ALLOWED_PREFIXES.some((prefix) => hyphenated.startsWith(prefix))
    )
      allow.delete(name);
  }
  return {
    allow,
    forwardAuthorization: options.forwardAuthorization,
  };
}

export interface UpstreamRequestFacts {
  readonly headers: IncomingHttpHeaders;
  readonly identity: Identity;
  readonly requestId: string;
  /** The connected peer's address, normalized (see http/client-address). */
  readonly peer: string;
  /** The peer is a configured trusted proxy: its X-Forwarded-* values are kept. */
  readonly peerTrusted: boolean;
  readonly upstreamHost: string;
  readonly encrypted: boolean;
  /** W3C Trace Context: the gateway's span for the upstream call, never the client's header. */
  readonly traceparent: string;
  readonly tracestate: string | undefined;
}

/**
 * The upstream's request headers, built afresh from an allow-list rather than by deleting
 * from the client's set: http-proxy-3 would otherwise copy every client header, spoofed
 * identity and hop-by-hop ones included (sagemathinc/http-proxy-3#28).
 */
export function buildUpstreamHeaders(
  policy: HeaderPolicy,
  facts: UpstreamRequestFacts,
): OutgoingHttpHeaders {
  const incoming = facts.headers;
  const out: OutgoingHttpHeaders = {};
  const connectionNamed =
    incoming.connection === undefined ? undefined : connectionTokens(incoming.connection);
  for (const name in incoming) {
    if (!policy.allow.has(name) || connectionNamed?.has(name) === true) continue;
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  if (policy.forwardAuthorization && incoming.authorization !== undefined)
    out.authorization = incoming.authorization;
  out.host = facts.upstreamHost;
  out['x-request-id'] = facts.requestId;
  out['x-auth-subject'] = facts.identity.subject;
  out['x-auth-method'] = facts.identity.method;
  if (facts.identity.key !== undefined) out['x-auth-key'] = facts.identity.key;
  out.traceparent = facts.traceparent;
  if (facts.tracestate !== undefined) out.tracestate = facts.tracestate;

  const client = facts.peer;
  const trusted = facts.peerTrusted;
  const forwardedFor = trusted ? single(incoming['x-forwarded-for']) : undefined;
  out['x-forwarded-for'] = forwardedFor === undefined ? client : `${forwardedFor}, ${client}`;
  out['x-forwarded-proto'] =
    (trusted ? single(incoming['x-forwarded-proto']) : undefined) ??
    (facts.encrypted ? 'https' : 'http');
  const forwardedHost =
    (trusted ? single(incoming['x-forwarded-host']) : undefined) ?? incoming.host;
  if (forwardedHost !== undefined) out['x-forwarded-host'] = forwardedHost;
  return out;
}

function connectionTokens(value: string): Set<string> {
  return new Set(value.split(',').map((token) => token.trim().toLowerCase()));
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
