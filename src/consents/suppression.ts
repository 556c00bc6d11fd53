/**
 * The last hop's safety net (sms.suppression): a message to a player the operator data says must not get one is
 * refused before it is claimed, whatever the CRM asked. The decision is a pure function of the player's standing;
 * where the standing comes from depends on operator.backend:
 * - sql: the player tables live in the ledger, so they are read inside the claim transaction, one primary-key
 *   statement for every message of the flush (src/ledger/consents.ts);
 * - http: the platform's GET /userconsents and /userblocks answers, asked before the claim (never inside a
 *   transaction) and cached for sms.suppression_cache_ttl.
 * An unknown player, or a message without activity.user_id, is sent as before.
 */
import type { Transaction } from 'kysely';
import type { Config } from '../config/schema.js';
import type { Logger } from 'pino';
import { findSmsStandings } from '../ledger/consents.js';
import type { Database, SuppressionReason } from '../ledger/schema.js';
import type { OperatorBackend, PlayerCountry } from '../operator/backend.js';

export type { SuppressionReason };

/** What the operator data says about one player. `sms`: opted in, opted out, or never set (`unset`). */
export interface PlayerStanding {
  blocked: boolean;
  excluded: boolean;
  sms: 'in' | 'out' | 'unset';
  /**
   * Where the player's record places them, when the ledger holds the record (sql backend): read in the same statement
   * as the standing, so the claim reads the recipient with it (src/sms/player-records.ts) without a read of its own.
   */
  place?: PlayerCountry;
}

/** Checked in this order: a block or an exclusion is the stronger statement, so it is the one named. */
export function decideSuppression(standing: PlayerStanding | undefined): SuppressionReason | null {
  if (!standing) return null;
  if (standing.blocked) return 'blocked';
  if (standing.excluded) return 'excluded';
  if (standing.sms === 'out') return 'opted_out';
  if (standing.sms === 'unset') return 'no_consent';
  return null;
}

const REASON_TEXT: ReadonlyMap<SuppressionReason, string> = new Map([
  ['blocked', 'is blocked'],
  ['excluded', 'is excluded'],
  ['opted_out', 'has opted out of sms'],
  ['no_consent', 'has no sms consent on record'],
]);

/** The error of the `rejected` outcome the CRM reads (src/sms/routes.ts) and /admin/messages shows. */
export function suppressionError(userId: string, reason: SuppressionReason): string {
  return `recipient: player ${JSON.stringify(userId)} ${REASON_TEXT.get(reason)}`;
}

/** Stored as the message's error_code. */
export const suppressionCode = (reason: SuppressionReason) => `suppressed_${reason}` as const;

export interface RecipientCheck {
  /** true: `standings` reads the ledger and is called with the claim transaction; false: called before it. */
  readonly inClaim: boolean;
  standings(userIds: readonly string[], trx?: Transaction<Database>): Promise<Map<string, PlayerStanding>>;
  /** A consent of this player changed here (STOP, START, a provider's opt-out): forget what is cached. */
  forget(userId: string): void;
}

/** A message on its way to the claim and, when its player was looked up before it (http backend), their standing. */
export interface ToClaim<M extends { userId: string | null }> {
  message: M;
  standing?: PlayerStanding;
}

/** The http backend's standings are asked before the claim: never a network call inside a transaction. */
export async function standingsBeforeClaim<M extends { userId: string | null }>(check: RecipientCheck | undefined, messages: M[]): Promise<Array<ToClaim<M>>> {
  if (!check || check.inClaim) return messages.map((message) => ({ message }));
  const ids = messages.flatMap((m) => (m.userId === null ? [] : [m.userId]));
  const standings = ids.length > 0 ? await check.standings(ids) : new Map<string, PlayerStanding>();
  return messages.map((message) => ({ message, standing: message.userId === null ? undefined : standings.get(message.userId) }));
}

/** Why each message's player must not get it (null: send), read in the claim transaction when the ledger holds them. */
export async function refusalsInClaim<M extends { userId: string | null }>(
  check: RecipientCheck | undefined,
  items: Array<ToClaim<M>>,
  trx: Transaction<Database>,
): Promise<Array<{ refusal: SuppressionReason | null; place?: PlayerCountry }>> {
  if (!check) return items.map(() => ({ refusal: null }));
  if (!check.inClaim) return items.map((i) => ({ refusal: decideSuppression(i.standing) }));
  const ids = items.flatMap((i) => (i.message.userId === null ? [] : [i.message.userId]));
  const standings = ids.length > 0 ? await check.standings(ids, trx) : new Map<string, PlayerStanding>();
  return items.map((i) => {
    const standing = i.message.userId === null ? undefined : standings.get(i.message.userId);
    return standing?.place ? { refusal: decideSuppression(standing), place: standing.place } : { refusal: decideSuppression(standing) };
  });
}

export function createSqlRecipientCheck(): RecipientCheck {
  return {
    inClaim: true,
    async standings(userIds, trx) {
      const rows = await findSmsStandings(trx!, userIds);
      const standings = new Map<string, PlayerStanding>();
      for (const [id, r] of rows) {
        // A record loaded before the CRM's rules were checked may hold anything there: only strings are read (as
        // the sql backend's playerCountries reads them).
        const text = (v: unknown) => (typeof v === 'string' ? v : '');
        standings.set(id, {
          blocked: r.is_blocked === 1,
          excluded: r.is_excluded === 1,
          sms: r.sms_opted_in === null ? 'unset' : r.sms_opted_in === 1 ? 'in' : 'out',
          place: { country: text(r.country), mobilePrefix: text(r.mobile_prefix), mobile: r.mobile_e164 },
        });
      }
      return standings;
    },
    forget() {},
  };
}

export interface HttpRecipientCheckOptions {
  backend: OperatorBackend;
  ttlMs: number;
  now: () => number;
  logger: Logger;
  /** Players remembered at most; the oldest entry goes first. */
  maxEntries?: number;
}

/**
 * The platform is asked at most once per player per TTL (concurrent sends to one player share the question). A
 * 404 means an unknown player (cached: sent as today). A platform that fails or answers nonsense is not cached
 * and the message is sent as it would be without player data: the CRM filtered it already, and holding every
 * send hostage to the platform's availability would turn its outage into ours. Each such miss is logged.
 */
export function createHttpRecipientCheck({ backend, ttlMs, now, logger, maxEntries = 100_000 }: HttpRecipientCheckOptions): RecipientCheck {
  const cache = new Map<string, { until: number; standing: PlayerStanding | undefined }>();
  const asking = new Map<string, Promise<PlayerStanding | undefined | 'failed'>>();

  async function ask(userId: string): Promise<PlayerStanding | undefined | 'failed'> {
    const [consents, blocks] = await Promise.all([backend.userConsents(userId), backend.userBlocks(userId)]);
    if ((!consents.ok && consents.kind === 'not_found') || (!blocks.ok && blocks.kind === 'not_found')) return undefined;
    if (!consents.ok || !blocks.ok) {
      const error = !consents.ok ? consents.error : !blocks.ok ? blocks.error : '';
      logger.warn({ user_id: userId, error }, 'player standing unavailable from the operator platform; sending without it');
      return 'failed';
    }
    const active = (type: string) => blocks.value.blocks.some((b) => b.type === type && b.active);
    // GET /userconsents answers a type never set as opted out, so on this backend "unset" reads as "out".
    const sms = consents.value.consents.find((c) => c.type === 'sms')?.opted_in ? 'in' : 'out';
    return { blocked: active('Blocked'), excluded: active('Excluded'), sms };
  }

  function standingOf(userId: string): Promise<PlayerStanding | undefined | 'failed'> {
    const cached = cache.get(userId);
    if (cached && cached.until > now()) return Promise.resolve(cached.standing);
    let pending = asking.get(userId);
    if (!pending) {
      pending = ask(userId)
        .catch((error: unknown) => {
          logger.warn({ err: error, user_id: userId }, 'asking for the player standing failed; sending without it');
          return 'failed' as const;
        })
        .then((standing) => {
          asking.delete(userId);
          if (standing !== 'failed') {
            cache.delete(userId);
            cache.set(userId, { until: now() + ttlMs, standing });
            if (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
          }
          return standing;
        });
      asking.set(userId, pending);
    }
    return pending;
  }

  return {
    inClaim: false,
    async standings(userIds) {
      const unique = [...new Set(userIds)];
      const answers = await Promise.all(unique.map(standingOf));
      const standings = new Map<string, PlayerStanding>();
      unique.forEach((id, i) => {
        const answer = answers[i];
        if (answer && answer !== 'failed') standings.set(id, answer);
      });
      return standings;
    },
    forget: (userId) => void cache.delete(userId),
  };
}

/** The check sms.suppression and operator.backend ask for; undefined when suppression is off. */
export function createRecipientCheck(
  config: Readonly<Config>,
  { backend, now, logger }: { backend: OperatorBackend; now: () => number; logger: Logger },
): RecipientCheck | undefined {
  if (config.sms.suppression === 'off') return undefined;
  if (backend.name === 'sql') return createSqlRecipientCheck();
  return createHttpRecipientCheck({ backend, ttlMs: config.sms.suppression_cache_ttl, now, logger });
}
