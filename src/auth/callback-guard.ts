/**
 * What guards the provider callbacks' door (src/http/provider-callback.ts, docs/trust.md): failed signatures counted
 * per client address, and every refusal logged as counts per minute.
 *
 * A forged callback is a guess at a provider's signature. The same limiter as failed authentications
 * (src/auth/failure-limit.ts) counts them, in a window of its own with the same `auth.failure_budget` and
 * `auth.failure_window`: past the budget, the address's callbacks are answered 429 with Retry-After before their
 * body is read or any signature computed, until its window ends; each such answer is held up to a second first
 * (CALLBACK_REFUSAL_PAUSE_MS). Only a failed signature or verification (403)
 * counts: a body the door refuses unread (400, 413) cost nothing to refuse. Providers do not fail their own
 * signatures, so a provider's address is refused only while it shares that address with a forger: behind a load
 * balancer, list the balancer in `server.trusted_proxies` (docs/trust.md). Addresses in `auth.trusted_addresses`
 * are never counted nor refused.
 *
 * Refusals are logged by src/kit/counted-log.ts, one key per door and configured provider (a name that is not
 * configured is answered 404 before anything is counted), so a flood writes a line a minute, not a line a request.
 */
import type { Context } from 'hono';
import type { Logger } from 'pino';
import type { CallbackGuard, CallbackRefusal } from '../http/provider-callback.js';
import { createCountedLog } from '../kit/counted-log.js';
import { type AddressTrust, type FailureLimiter, requestAddress } from './failure-limit.js';

const LOG_INTERVAL_MS = 60_000;

/**
 * How long a blocked address's 429 is held before it is sent (never longer than its Retry-After): one client flooding
 * on 32 connections then gets 32 answers a second, each costing a timer, instead of taking the event loop from
 * /healthz and everyone else (docs/public-doors.md, "A forged callback costs little").
 */
const CALLBACK_REFUSAL_PAUSE_MS = 1_000;

interface CallbackGuardOptions {
  limiter: FailureLimiter;
  now: () => number;
  trust: AddressTrust;
  logger: Logger;
}

export function createCallbackGuard({ limiter, now, trust, logger }: CallbackGuardOptions): CallbackGuard {
  const log = createCountedLog(
    (line) =>
      logger.warn(
        {
          ...line.labels,
          refused: line.count,
          by_status: line.byStatus,
          reasons: line.reasons,
          ...(line.otherReasons > 0 ? { other_reasons: line.otherReasons } : {}),
          since: new Date(line.since).toISOString(),
        },
        'provider callbacks refused (counts per minute)',
      ),
    LOG_INTERVAL_MS,
    now,
  );
  const counted = (c: Context) => {
    const address = requestAddress(c, trust);
    return trust.isTrustedClient(address) ? undefined : address;
  };
  return {
    pauseFor: (waitMs) => Math.min(waitMs, CALLBACK_REFUSAL_PAUSE_MS),
    blockedFor(c) {
      // While no address has a failure on record nothing can be blocked, and no address need be read.
      if (!limiter.tracking) return 0;
      const address = counted(c);
      return address === undefined ? 0 : limiter.blockedFor(address, now());
    },
    refused(c, refusal: CallbackRefusal) {
      log.count(`${refusal.door} ${refusal.provider}`, { door: refusal.door, provider: refusal.provider }, refusal.status, refusal.reason);
      if (refusal.status !== 403) return;
      const address = counted(c);
      if (address !== undefined) limiter.recordFailure(address, now());
    },
  };
}
