/**
 * Failed authentications per client address (docs/security.md, docs/trust.md): every credential check answers 401
 * on a wrong or missing credential, so counting 401 answers covers them all (SMS and operator keys, Basic, OAuth
 * tokens and the token endpoint, the admin Bearer key, console sign-in). An address past `auth.failure_budget`
 * failures within `auth.failure_window` gets 429 with Retry-After on every authenticated path until its window ends
 * (503 on the single send, see below), so a guesser gets a few dozen tries a minute instead of thousands a second.
 *
 * What is not a guess is not counted: a check that recognises a credential as one of ours that merely ran out (an
 * expired token we signed, a token of ours signed by another process or before a restart) marks its 401 with
 * `markNotAGuess`, so a CRM with many calls in flight at expiry is told 401 and fetches a new token, never 429. Nor
 * is a 401 the CRM's credential did not cause: POST /authenticate answers 401 for a player's session it refuses, which
 * is counted on its own budget instead (`limitRefusedSessions`), so players cannot lock the CRM out.
 * Addresses in `auth.trusted_addresses` (the CRM's egress) are never counted nor refused. Paths that check no
 * credential, or whose callers sign their requests (provider callbacks at /dlr and /mo), are never refused here:
 * the callbacks' forged signatures have a limiter of their own (src/auth/callback-guard.ts).
 *
 * The address is the TCP peer's, or behind a proxy listed in `server.trusted_proxies` the X-Forwarded-For hop that
 * proxy saw (src/kit/client-address.ts), so one guesser behind a load balancer locks out only itself.
 * Counts live in this process: another instance keeps its own (a guesser gets the budget once
 * per process).
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context, MiddlewareHandler } from 'hono';
import { clientAddressOf } from '../kit/client-address.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by a credential check whose 401 is not a guess (markNotAGuess). */
    authFailureNotAGuess: boolean;
    /**
     * Set when this limiter refused the request (429, or 503 on the single send): the request metrics count it among
     * the refused credentials (`sms_gateway_http_auth_refusals_total`), so a guesser past its budget stays visible.
     */
    authFailureLimited: boolean;
    /**
     * Set by limitRefusedSessions on POST /authenticate's 401 for a player's session: the CRM's credential was
     * accepted, so the request metrics do not count it among the refused credentials either.
     */
    sessionRefused: boolean;
  }
}

/**
 * Marks this request's 401 as not a guess at the caller's credential: a credential of ours that is no longer good, or
 * a 401 about something else once the credential was accepted (a player's session at POST /authenticate,
 * `limitRefusedSessions`). It is not counted.
 */
export function markNotAGuess(c: Context): void {
  c.set('authFailureNotAGuess', true);
}

/** Addresses remembered at most; past it the oldest window is forgotten, so a flood of addresses stays bounded. */
const MAX_ADDRESSES = 100_000;

const SINGLE_SEND_PATH = '/channels/sms/single';

/** Paths that check no credential, or whose callers authenticate otherwise (providers sign their receipts). */
const UNAUTHENTICATED = /^\/(healthz|readyz|openapi\.json|docs|dlr\/[^/]*|mo\/[^/]*)$/;

export interface FailureLimiter {
  /** Milliseconds until `address` may try again, or 0 when it may now. */
  blockedFor(address: string, now: number): number;
  recordFailure(address: string, now: number): void;
  /** False while no address has a failure on record: then nothing can be blocked, and no address need be read. */
  readonly tracking: boolean;
}

export function createFailureLimiter(budget: number, windowMs: number, maxAddresses = MAX_ADDRESSES): FailureLimiter {
  const windows = new Map<string, { start: number; failures: number }>();
  return {
    get tracking() {
      return windows.size > 0;
    },
    blockedFor(address, now) {
      const w = windows.get(address);
      if (!w || budget === 0 || now - w.start >= windowMs || w.failures < budget) return 0;
      return w.start + windowMs - now;
    },
    recordFailure(address, now) {
      if (budget === 0) return;
      const w = windows.get(address);
      if (w && now - w.start < windowMs) {
        w.failures += 1;
        return;
      }
      // A new window goes to the end of the Map's order, so the first entry is always the oldest.
      windows.delete(address);
      windows.set(address, { start: now, failures: 1 });
      if (windows.size > maxAddresses) windows.delete(windows.keys().next().value!);
    },
  };
}

export interface AddressTrust {
  /** server.trusted_proxies: peers whose X-Forwarded-For is believed. */
  isTrustedProxy: (address: string) => boolean;
  /** auth.trusted_addresses: clients never counted nor refused. */
  isTrustedClient: (address: string) => boolean;
}

const NO_TRUST: AddressTrust = { isTrustedProxy: () => false, isTrustedClient: () => false };

function peerAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown'; // not served by node:http (app.request in a script): one shared budget
  }
}

/** The address a request is counted under: the TCP peer, or the X-Forwarded-For hop a trusted proxy saw. */
export function requestAddress(c: Context, trust: AddressTrust): string {
  return clientAddressOf(peerAddress(c), c.req.header('x-forwarded-for'), trust.isTrustedProxy);
}

export function limitFailedAuthentications(limiter: FailureLimiter, now: () => number, trust: AddressTrust = NO_TRUST): MiddlewareHandler {
  const clientAddress = (c: Context) => requestAddress(c, trust);
  return async (c, next) => {
    if (UNAUTHENTICATED.test(c.req.path)) return next();
    // The client's address is read only when some address has failed: a gateway whose callers all hold valid
    // credentials pays one property read per request here.
    const address = limiter.tracking ? clientAddress(c) : undefined;
    const waitMs = address === undefined || trust.isTrustedClient(address) ? 0 : limiter.blockedFor(address, now());
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      c.header('Retry-After', String(seconds));
      const error = `too many failed authentications from this address; try again in ${seconds} s`;
      // The CRM skips a single SMS answered with any 4xx (docs/crm-interface.md, Errors) and retries only 5xx: a CRM
      // sharing its address with a guesser would lose messages to a 429, so the single send path answers 503.
      const status = c.req.path === SINGLE_SEND_PATH ? 503 : 429;
      c.set('authFailureLimited', true);
      return c.json({ error, code: status }, status);
    }
    await next();
    if (c.res.status !== 401 || c.get('authFailureNotAGuess')) return;
    const failed = address ?? clientAddress(c);
    if (!trust.isTrustedClient(failed)) limiter.recordFailure(failed, now());
  };
}

/**
 * POST /authenticate's refused sessions, on their own budget (`operator.session_failure_budget` per
 * `operator.session_failure_window`, docs/security.md). Mounted after the operator API's credential check, so every
 * 401 under it is a player's session the check refused (stale, forged, of another site), never the CRM's credential:
 * it is marked not a guess (the CRM's address keeps its whole `auth.failure_budget`) and counted here instead. Past
 * the budget that address gets 429 with Retry-After on /authenticate alone, without the session being checked, so a
 * flood of sessions costs neither the operator's platform nor this process more than the budget; the CRM's other
 * calls are answered as usual. `auth.trusted_addresses` are held to it too: the CRM is the one caller of this path,
 * so a bound that spared its address would bound nothing.
 */
export function limitRefusedSessions(limiter: FailureLimiter, now: () => number, trust: AddressTrust = NO_TRUST): MiddlewareHandler {
  return async (c, next) => {
    const address = requestAddress(c, trust);
    const waitMs = limiter.blockedFor(address, now());
    if (waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      c.header('Retry-After', String(seconds));
      return c.json({ error: `too many invalid sessions from this address; try again in ${seconds} s`, code: 429 }, 429);
    }
    await next();
    if (c.res.status !== 401) return;
    markNotAGuess(c);
    c.set('sessionRefused', true);
    limiter.recordFailure(address, now());
  };
}
