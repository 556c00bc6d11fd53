/**
 * POST /authenticate (docs/operator-api.md "POST /authenticate"): is this site session id a live session, and
 * whose? Asked of the operator's platform (operator.authenticate_url) or checked here as a signed session token
 * (operator.session_tokens) with jose. Every answer is worked out afresh: a session ends at the operator's word,
 * so nothing here is remembered between calls (jose keeps the key set of jwks_url, not any verdict).
 */
import type { JWTVerifyGetKey } from 'jose';
import { request } from 'undici';
import type { Config } from '../../config/schema.js';
import { parseJsonText } from '../../../providers/kit/http-pool.js';

/** `code` says why a session was not accepted: 401 not valid, 502/504 the platform failed or was slow. */
export type SessionVerdict = { ok: true; userId: string } | { ok: false; code: 401 | 502 | 504; error: string };

export type SessionCheck = (sid: string) => Promise<SessionVerdict>;

const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** A user id as the CRM takes it: a non-empty string, or an integer given as one. */
export function userIdOf(value: unknown): string | undefined {
  if (typeof value === 'string' && value.length > 0 && value.length <= 255) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/** 9999-12-31T23:59:59Z: a NumericDate past it is no time a session can have (nor a date `Date` writes in four digits). */
const LATEST_NUMERIC_DATE = 253_402_300_799;
const TIME_CLAIMS = ['exp', 'nbf', 'iat'] as const;

/**
 * Why a signature-checked token's times are refused, or undefined: what jose leaves to its caller. jose takes any
 * JSON number for `exp`, `nbf` and `iat`, Infinity included (`1e400` after JSON.parse, an `exp` that never passes),
 * and reads `iat` only when asked for a maximum age, so a token issued a year ahead passed. Each time claim present
 * must be a finite second between 1970 and 9999, and `iat` no later than now plus `clock_skew`. Pure.
 */
export function refuseTimeClaims(payload: Readonly<Record<string, unknown>>, nowSeconds: number, toleranceSeconds: number): string | undefined {
  for (const claim of TIME_CLAIMS) {
    if (!Object.hasOwn(payload, claim)) continue;
    const value = payload[claim];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > LATEST_NUMERIC_DATE) return `${claim} is not a time between 1970 and 9999`;
  }
  const iat = payload.iat as number | undefined;
  if (iat !== undefined && iat > nowSeconds + toleranceSeconds) return 'iat is later than now by more than operator.session_tokens.clock_skew';
  return undefined;
}

/** `now`: the gateway's clock in milliseconds, against which a session token's times are read. */
export function createSessionCheck(operator: Config['operator'], now: () => number): SessionCheck {
  if (operator.authenticate_url) return platformCheck(operator.authenticate_url, operator.headers, operator.timeout);
  if (operator.session_tokens) return tokenCheck(operator.session_tokens, now);
  return async () => ({ ok: false, code: 401, error: 'sid: sessions cannot be checked (set operator.authenticate_url or operator.session_tokens)' });
}

function platformCheck(url: string, headers: Readonly<Record<string, string>>, timeoutMs: number): SessionCheck {
  return async (sid) => {
    let status: number;
    let text: string;
    try {
      const res = await request(url, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ sid }),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.statusCode;
      text = (await res.body.text()).slice(0, 64 * 1024);
    } catch (error) {
      const timedOut = error instanceof Error && /timeout|abort/i.test(`${error.name} ${(error as { code?: string }).code ?? ''}`);
      return timedOut
        ? { ok: false, code: 504, error: `operator platform did not answer the session check within ${timeoutMs} ms` }
        : { ok: false, code: 502, error: `operator platform: session check failed (${(error as { code?: string }).code ?? (error as Error).message})` };
    }
    if (status >= 500) return { ok: false, code: 502, error: `operator platform answered ${status} to the session check` };
    if (status !== 200) return { ok: false, code: 401, error: 'sid: not a valid session' };
    const userId = userIdOf((parseJsonText(text) as { user_id?: unknown } | undefined)?.user_id);
    return userId === undefined
      ? { ok: false, code: 502, error: 'operator platform answered the session check without a valid user_id' }
      : { ok: true, userId };
  };
}

function tokenCheck(tokens: NonNullable<Config['operator']['session_tokens']>, now: () => number): SessionCheck {
  const jwksUrl = tokens.secret ? undefined : new URL(tokens.jwks_url!);
  // jose comes in only where session tokens are configured: it is 46 modules a gateway without them never runs
  // (bench/README.md "Memory"). The key set is made once, as before, when the module has loaded.
  const loaded = import('jose').then((jose) => ({
    jose,
    key: (jwksUrl ? jose.createRemoteJWKSet(jwksUrl) : new TextEncoder().encode(tokens.secret)) as Uint8Array | JWTVerifyGetKey,
  }));
  const tolerance = Math.round(tokens.clock_skew / 1000);
  const options = {
    algorithms: tokens.secret ? ['HS256'] : ASYMMETRIC,
    issuer: tokens.issuer,
    audience: tokens.audience,
    clockTolerance: tolerance,
    // A token that never expires would be a session that never ends.
    requiredClaims: ['exp'],
  };
  return async (sid) => {
    const { jose, key } = await loaded;
    const nowMs = now();
    const at = { ...options, currentDate: new Date(nowMs) };
    try {
      const { payload } = typeof key === 'function' ? await jose.jwtVerify(sid, key, at) : await jose.jwtVerify(sid, key, at);
      const refused = refuseTimeClaims(payload, Math.floor(nowMs / 1000), tolerance);
      if (refused) return { ok: false, code: 401, error: `sid: not a valid session (${refused})` };
      const userId = userIdOf(payload[tokens.user_claim]);
      if (userId === undefined) return { ok: false, code: 401, error: `sid: the token has no user id in ${tokens.user_claim}` };
      return { ok: true, userId };
    } catch (error) {
      // The key set could not be fetched: the operator's side failed, not the player's session.
      if (error instanceof jose.errors.JWKSTimeout) return { ok: false, code: 504, error: 'session_tokens.jwks_url did not answer in time' };
      if (error instanceof jose.errors.JOSEError && error.code === 'ERR_JWKS_INVALID')
        return { ok: false, code: 502, error: 'session_tokens.jwks_url did not answer a key set' };
      if (!(error instanceof jose.errors.JOSEError))
        return { ok: false, code: 502, error: `session_tokens: the key set could not be read (${(error as Error).message})` };
      return { ok: false, code: 401, error: `sid: not a valid session (${error.code})` };
    }
  };
}
