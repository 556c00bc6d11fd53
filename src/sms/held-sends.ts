/**
 * Held messages sent when their quiet hours end (src/sms/quiet-hours.ts decides; docs/routing.md "Quiet hours"). The
 * held sends outbox (held-sends-outbox.ts) claims each held message whose release time has come and hands it here,
 * to the send path every message takes: its row moved from `held` to `dispatching` (the claim's step, one conditional
 * UPDATE: of two instances only one sends it), then the send step and the record step of src/sms/dispatch.ts, with
 * the providers' throttles and failover routes. A message past quiet_hours.max_wait is never sent: it ends `failed`,
 * as do one whose route's validity, counted from its acceptance, ran out while it was held and one its provider
 * refuses once released, and the CRM gets that status as its conversion. One released in time goes with what is left
 * of its validity.
 */
import type { Logger } from 'pino';
import type { SendResult } from '../../providers/types.js';
import { storedIdentifiers } from '../http/exact-json.js';
import { readWritten } from '../kit/phone-number.js';
import type { Kysely } from 'kysely';
import type { QuietHoursConfig } from '../config/quiet-hours-config.js';
import { failHeldMessage, findHeldRecipient, holdAgain, takeHeldMessage, type DueHeldSend, type HeldMessage } from '../ledger/held-sends.js';
import type { Database } from '../ledger/schema.js';
import { decideRelease, releaseTime } from './quiet-hours.js';
import type { TransactionQueue } from '../ledger/engine/transaction-queue.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import type { Wake } from '../outbox/wake.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import type { Routing } from '../provider-wrappers/routing.js';
import type { DispatchResult } from './outcome.js';
import type { PreparedMessage } from './prepare.js';
import type { SendAnswer } from './record.js';
import { validUntilOf, type SendTimes } from './send.js';

/** The error code of a held message never sent because it waited past quiet_hours.max_wait. */
export const HELD_EXPIRED = 'held_expired';
/** The error code of a held message never sent because its route's validity ran out while it was held. */
export const HELD_VALIDITY_EXPIRED = 'held_validity_expired';

export interface HeldSenderDeps {
  db: Kysely<Database>;
  queue: TransactionQueue;
  /** quiet_hours: whether the window that held a message is open at its release. */
  quietHours: QuietHoursConfig;
  /** Its `routing.zones` (the operator's zones by prefix), which place a recipient for quiet hours too. */
  routing?: Pick<Routing, 'snapshot'> | undefined;
  logger: Logger;
  now: () => number;
  router: ProviderRouter;
  wake: Wake;
  /** sms.send_timeout: the longest one provider call (and its wait for provider capacity) may take. */
  sendTimeoutMs: number;
  /** The send path's send and record steps (src/sms/send.ts, src/sms/record.ts), the dispatcher's own. */
  send(message: PreparedMessage, smsId: string, times: SendTimes): Promise<SendResult>;
  record(answer: SendAnswer): Promise<DispatchResult>;
  /**
   * The routing verdict decided again at the release (src/sms/routing-verdict.ts), so that a held message for a route
   * goes by the rule in force when it is sent; absent when no routing is configured.
   */
  decideRoute?: (message: PreparedMessage) => PreparedMessage;
}

/**
 * One held message's send, as the held sends outbox asks for it. `heldAgain`: its window was closed at its release, so
 * it stays owed until the next opening (the outbox must not mark it done).
 */
export type HeldOutcome = OutboxOutcome | { ok: true; status: null; heldAgain: true };
export type HeldSender = (row: DueHeldSend) => Promise<HeldOutcome>;

/** The message as the send step takes it, from its row and its held text. */
function preparedOf(message: HeldMessage, text: string, provider: PreparedMessage['provider']): PreparedMessage {
  return {
    activityKey: message.activity_key,
    activityJson: message.activity_json,
    // What a rule matches on: the activity's brand, and the provider_name as the route it picked (its alias is gone).
    brand: storedIdentifiers(message.activity_json, ['brand_id']).brand_id,
    providerName: message.provider.toLowerCase(),
    userId: message.user_id,
    provider,
    recipient: message.recipient,
    country: readWritten(message.recipient.slice(1))?.country,
    reading: undefined,
    recipientAsSent: undefined,
    sender: message.sender,
    text,
    encoding: message.encoding,
    segments: message.segments,
    notes: [],
    acceptedAt: message.created_at,
  };
}

export function createHeldSender(deps: HeldSenderDeps): HeldSender {
  const { logger, now } = deps;

  async function fail(smsId: string, failure: { error: string; code: string }, taken = false): Promise<void> {
    const failed = await deps.queue.transact((trx) => failHeldMessage(trx, smsId, failure, now(), taken));
    if (failed) deps.wake('conversions');
  }

  return async function sendHeld(row) {
    if (now() >= row.expires_at) {
      await fail(row.sms_id, { error: 'held for its quiet hours past quiet_hours.max_wait: never sent', code: HELD_EXPIRED });
      logger.info({ sms_id: row.sms_id }, 'held sms expired: never sent');
      return { ok: true, status: null };
    }
    const recipient = await findHeldRecipient(deps.db, row.sms_id);
    const release =
      recipient === undefined ? undefined : decideRelease(now(), recipient, row.quiet_window, deps.quietHours, deps.routing?.snapshot().calendar.zones);
    if (release?.action === 'hold') {
      const releaseAt = release.until === null ? row.expires_at : releaseTime(release.until, row.sms_id, deps.quietHours.spread);
      await deps.queue.transact((trx) => holdAgain(trx, row, releaseAt));
      logger.info({ sms_id: row.sms_id, held_until: new Date(releaseAt).toISOString() }, 'held sms due in its quiet hours: held again');
      return { ok: true, status: null, heldAgain: true };
    }
    const take = await deps.queue.transact((trx) => takeHeldMessage(trx, row.sms_id, now()));
    if (take.outcome === 'done') return { ok: true, status: null };
    // Under way elsewhere, or its last send unresolved (its process died mid-call): the sweep resolves it, then this.
    if (take.outcome === 'wait') return { ok: false, status: null, error: `the message is ${take.state}: looked at again later` };
    const { message } = take;
    const route = deps.router.resolve(message.provider);
    const started = performance.now();
    const at = now();
    const taken = route.ok ? preparedOf(message, row.content ?? '', route.provider) : undefined;
    const prepared = taken && deps.decideRoute ? deps.decideRoute(taken) : taken;
    const validity = prepared?.verdict?.ok ? prepared.verdict.choice?.validity : undefined;
    if (validity !== undefined && validUntilOf(validity, message.created_at) <= at) {
      const error = `held for its quiet hours past its route's validity (${validity} minutes from its acceptance): never sent`;
      await fail(message.sms_id, { error, code: HELD_VALIDITY_EXPIRED }, true);
      logger.info({ sms_id: message.sms_id }, 'held sms past its validity: never sent');
      return { ok: true, status: null };
    }
    const answer: SendResult = prepared
      ? await deps.send(prepared, message.sms_id, { deadline: at + deps.sendTimeoutMs, waitDeadline: at + deps.sendTimeoutMs })
      : { ok: false, kind: 'permanent', error: `provider ${message.provider} is no longer configured` };
    const result: DispatchResult = prepared
      ? await deps.record({ message: prepared, smsId: message.sms_id, answer, seconds: (performance.now() - started) / 1000 })
      : { outcome: 'rejected', smsId: message.sms_id, error: answer.ok ? '' : answer.error };
    switch (result.outcome) {
      case 'submitted':
        return { ok: true, status: null };
      case 'rejected':
        // Refused for good after the CRM heard 200: the CRM learns it from the conversion.
        await fail(message.sms_id, { error: result.error, code: result.code ?? 'rejected_after_hold' });
        return { ok: true, status: null };
      case 'retryable':
      case 'uncertain':
        // Backed off and taken again (an uncertain one once its provider has said whether it has it).
        return { ok: false, status: null, error: result.error };
    }
  };
}

/**
 * The held sends outbox's receiver: the send path, which `serve` builds after the outboxes (the providers come later),
 * so the outbox's client is this port and the dispatcher binds its sender to it (src/sms/dispatch.ts, startDispatcher).
 * A round that comes before the binding waits for it; a stop before it ends the wait.
 */
export interface HeldSendPort {
  send: HeldSender;
  bind(sender: HeldSender): void;
  abort(): void;
}

export function createHeldSendPort(): HeldSendPort {
  let bound: HeldSender | undefined;
  let ready!: (sender: HeldSender | undefined) => void;
  const binding = new Promise<HeldSender | undefined>((resolve) => (ready = resolve));
  return {
    async send(row) {
      const sender = bound ?? (await binding);
      if (!sender) return { ok: false, status: null, error: 'the send path is stopping' };
      return sender(row);
    },
    bind(sender) {
      bound = sender;
      ready(sender);
    },
    abort() {
      ready(undefined);
    },
  };
}
