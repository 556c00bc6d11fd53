/**
 * OAuth 2 client credentials for the operator API (docs/crm-interface.md, Authentication; docs/crm-interface.md §6).
 * The token endpoint takes client_id, client_secret and grant_type=client_credentials as a JSON body (POST), a
 * form body (POST, as RFC 6749 has it) or query parameters (GET), and answers {access_token, expires_in, token_type}.
 * Tokens are HS256 JWTs checked by signature and expiry alone, so any instance that shares auth.oauth.signing_secret
 * accepts the tokens of any other, with no token store.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema.js';
import { readJsonBody } from '../http/json-body.js';
import { crmError } from '../http/operator-errors.js';
import { mountRoutes, route, type ResponseDoc } from '../http/route-table.js';
import { createKeyMatcher } from './api-key.js';
import { markNotAGuess } from './failure-limit.js';

type OAuthConfig = NonNullable<Config['auth']['oauth']>;

/**
 * The token request's parameters, in the order they are checked (each must be a non-empty string, then grant_type
 * must be client_credentials). The handler checks them by hand, so its answers name the field in its own words.
 */
export const tokenRequestSchema = z.object({
  grant_type: z.literal('client_credentials'),
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
});

export const tokenAnswerSchema = z.strictObject({
  access_token: z.string().describe('An HS256 JWT; send it as Authorization: Bearer <access_token>'),
  expires_in: z.number().int().describe('Seconds the token stays valid (auth.oauth.token_ttl_seconds)'),
  token_type: z.literal('Bearer'),
});

/**
 * Why a token is refused. `ours`: the token is one of this gateway's, merely no longer good here (expired, or signed
 * by another process: before a restart without signing_secret, or another instance), so its 401 is not a guess and
 * the failure limit does not count it (src/auth/failure-limit.ts).
 */
export interface TokenProblem {
  problem: string;
  ours: boolean;
}

export interface TokenIssuer {
  issue(): z.output<typeof tokenAnswerSchema>;
  /** Undefined when the token is good, else why it is not. */
  check(token: string): TokenProblem | undefined;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/**
 * The token key never comes from client_secret: a short client secret would let anyone holding one token recover it
 * offline. It is signing_secret when set (instances sharing one database need the same one), else random bytes of
 * this process, so tokens end with a restart and the CRM fetches a new one after its 401.
 */
export function signingKeyOf(oauth: OAuthConfig, processSecret: Buffer): Buffer {
  return createHmac('sha256', oauth.signing_secret ?? processSecret)
    .update('crm-sms-gateway oauth access-token key v1')
    .digest();
}

export function createTokenIssuer(oauth: OAuthConfig, now: () => number, processSecret: Buffer): TokenIssuer {
  const key = signingKeyOf(oauth, processSecret);
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const sign = (input: string) => createHmac('sha256', key).update(input).digest();

  return {
    issue() {
      const iat = Math.floor(now() / 1000);
      const payload = b64url(JSON.stringify({ sub: oauth.client_id, iat, exp: iat + oauth.token_ttl_seconds, jti: randomUUID() }));
      const signature = b64url(sign(`${header}.${payload}`));
      return { access_token: `${header}.${payload}.${signature}`, expires_in: oauth.token_ttl_seconds, token_type: 'Bearer' };
    },
    check(token) {
      const parts = token.split('.');
      if (parts.length !== 3 || parts[0] !== header) return { problem: 'the token is not one this gateway issued', ours: false };
      const claims = readClaims(parts[1]!);
      const given = Buffer.from(parts[2]!, 'base64url');
      const expected = sign(`${parts[0]}.${parts[1]}`);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        // Our header and our claims' shape with a well-formed signature: a token of ours from a key this process does
        // not hold. Forging the shape gains nothing (the HMAC is what a guesser would have to guess), and the check
        // does not compare `sub`, so the lockout cannot be used to learn the client_id.
        return { problem: 'the token signature is not valid; request a new token', ours: claims !== undefined && given.length === expected.length };
      }
      if (!claims) return { problem: 'the token is not one this gateway issued', ours: false };
      if (claims.sub !== oauth.client_id) return { problem: 'the token was issued to another client', ours: true };
      if (now() / 1000 >= claims.exp) return { problem: 'the token has expired; request a new one', ours: true };
      return undefined;
    },
  };
}

/** The claims of a token this gateway issues (issue() above), or undefined when the payload is not of that shape. */
function readClaims(payload: string): { sub: string; iat: number; exp: number; jti: string } | undefined {
  // A payload longer than any we issue is not ours; it is not parsed.
  if (payload.length > 512) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const { sub, iat, exp, jti } = claims ?? {};
    if (typeof sub !== 'string' || typeof iat !== 'number' || typeof exp !== 'number' || typeof jti !== 'string') return undefined;
    return { sub, iat, exp, jti };
  } catch {
    return undefined;
  }
}

export function requireBearerToken(issuer: TokenIssuer): MiddlewareHandler {
  return async (c, next) => {
    const header = c.req.header('authorization');
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
    const refused = token
      ? issuer.check(token)
      : { problem: header ? 'Authorization: expected Bearer <access_token>' : 'Authorization: header is missing (Bearer <access_token>)', ours: false };
    if (refused) {
      if (refused.ours) markNotAGuess(c);
      c.header('WWW-Authenticate', 'Bearer error="invalid_token"');
      return c.json({ error: refused.problem, code: 401 }, 401);
    }
    await next();
  };
}

/** The three parameters from whichever form the request used, or an error answer. */
type TokenRequest = { ok: true; params: Record<string, unknown> } | { ok: false; error: string; status: 400 | 415 };

async function readTokenRequest(c: Context): Promise<TokenRequest> {
  if (c.req.method === 'GET') return { ok: true, params: c.req.query() };
  if (/^application\/x-www-form-urlencoded\b/i.test(c.req.header('content-type') ?? '')) {
    return { ok: true, params: Object.fromEntries(new URLSearchParams(await c.req.text())) };
  }
  const body = await readJsonBody(c);
  if (!body.ok) return body;
  if (body.value === null || typeof body.value !== 'object' || Array.isArray(body.value))
    return { ok: false, error: 'body: must be a JSON object', status: 400 };
  return { ok: true, params: body.value as Record<string, unknown> };
}

/** /oauth/token: mounted in auth.mode oauth only. */
export function oauthTokenRoutes(oauth: OAuthConfig, issuer: TokenIssuer) {
  const idMatches = createKeyMatcher([oauth.client_id]);
  const secretMatches = createKeyMatcher([oauth.client_secret]);
  const app = new Hono();

  const token = async (c: Context) => {
    // RFC 6749 §5.1: token answers are never cached.
    c.header('Cache-Control', 'no-store');
    const request = await readTokenRequest(c);
    if (!request.ok) return c.json({ error: request.error }, request.status);
    const { params } = request;
    for (const name of Object.keys(tokenRequestSchema.shape)) {
      if (typeof params[name] !== 'string' || params[name] === '') return c.json({ error: `${name}: is required` }, 400);
    }
    if (params.grant_type !== 'client_credentials') {
      return c.json({ error: `grant_type: must be client_credentials (got ${JSON.stringify(params.grant_type)})` }, 400);
    }
    // Both checks always run, so the timing does not tell which of the two was wrong.
    const idOk = idMatches(params.client_id as string);
    const secretOk = secretMatches(params.client_secret as string);
    if (!idOk || !secretOk) return c.json({ error: 'client_id or client_secret is not valid' }, 401);
    return c.json(issuer.issue(), 200);
  };
  const tokenAnswers = (contentType: boolean): Record<number, ResponseDoc> => ({
    200: {
      description: 'An access token',
      schema: tokenAnswerSchema,
      headers: { 'Cache-Control': { description: 'no-store', schema: z.literal('no-store') } },
    },
    400: crmError(
      contentType
        ? 'The body is not JSON, or a parameter is missing, or grant_type is not client_credentials'
        : 'A parameter is missing, or grant_type is not client_credentials',
    ),
    401: crmError('client_id or client_secret is not valid'),
    ...(contentType
      ? { 415: crmError('Content-Type is neither application/json nor application/x-www-form-urlencoded') }
      : ({} as Record<number, ResponseDoc>)),
  });
  mountRoutes(app, [
    route({
      method: 'post',
      path: '/token',
      doc: {
        tag: 'operator',
        summary: 'An access token for the operator API (client credentials)',
        request: { schema: tokenRequestSchema, contentTypes: ['application/json', 'application/x-www-form-urlencoded'] },
        responses: tokenAnswers(true),
      },
      handlers: [token],
    }),
    route({
      method: 'get',
      path: '/token',
      doc: {
        tag: 'operator',
        summary: 'An access token for the operator API (client credentials as query parameters)',
        parameters: Object.keys(tokenRequestSchema.shape).map((name) => ({
          name,
          in: 'query' as const,
          required: true,
          schema: tokenRequestSchema.shape[name as keyof typeof tokenRequestSchema.shape],
        })),
        responses: tokenAnswers(false),
      },
      handlers: [token],
    }),
  ]);
  return app;
}
