/**
 * The send path after validation (docs/design.md §1, docs/architecture.md "Send"), as three steps:
 * 1. claim (src/sms/claim.ts): each message's row committed before any provider call;
 * 2. send (src/sms/send.ts): the claimed ones handed to their provider, with bounded concurrency, until the deadline;
 * 3. record (src/sms/record.ts): each answer written to its row as the message's SendOutcome (src/sms/outcome.ts).
 * Single and batch requests share it; the ledger writes of concurrent requests share commits through the ledger's
 * one grouping layer (src/ledger/engine/transaction-queue.ts).
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { NOT_SENT_SHUTTING_DOWN } from '../../providers/types.js';
import type { Database } from '../ledger/schema.js';
import type { TransactionQueue } from '../ledger/engine/transaction-queue.js';
import type { SendMetrics } from '../observability/metrics.js';
import { TRACING_OFF, type TraceSpan, type Tracing } from '../observability/tracing.js';
import { createClaimStep, type Claim } from './claim.js';
import type { RepeatTimings } from './idempotency.js';
import type { DispatchResult } from './outcome.js';
import type { PreparedMessage } from './prepare.js';
import { createRecordStep } from './record.js';
import type { CostBook } from '../costs/cost-book.js';
import { createSendStep } from './send.js';
import type { RecipientCheck } from '../consents/suppression.js';
import type { Shutdown } from '../kit/shutdown.js';
import type { Config } from '../config/schema.js';
import { createProviderOptOuts } from '../consents/opt-outs.js';
import type { OperatorBackend } from '../operator/backend.js';
import { readWithPlayerRecords, type PlayerCountries } from './player-records.js';
import type { SmsProvider } from '../../providers/types.js';
import type { ReceiptIntake } from '../delivery/intake.js';
import { lookupOptionsOf, resolveLostSends, type LookupObservers } from '../delivery/lookups.js';
import type { Routing } from '../provider-wrappers/routing.js';
import { routingApplies, withRoutingVerdicts } from './routing-verdict.js';
import type { QuietHoursConfig } from '../config/quiet-hours-config.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';
import type { Wake } from '../outbox/wake.js';
import { createHeldSender, type HeldSendPort } from './held-sends.js';

export type { DispatchResult, PreparedMessage };

export interface DispatcherDeps {
  db: Kysely<Database>;
  logger: Logger;
  now: () => number;
  storeContent: boolean;
  /** sms.dispatch_lease and sms.ambiguous_retry_after, for repeats of an activity.id (idempotency.ts). */
  repeatTimings: RepeatTimings;
  sendTimeoutMs: number;
  callbackUrl: (providerName: string, smsId: string) => string;
  /** The ledger's grouping layer, shared with the gateway's other writers. */
  queue: TransactionQueue;
  /** The receipt intake's re-match, inside the transaction that recorded provider answers (record.ts). */
  rematchAfterSend?: ReceiptIntake['rematchAfterSend'];
  metrics?: SendMetrics;
  /** sms.suppression: where a player's standing is read; absent when suppression is off. */
  recipients?: RecipientCheck;
  /**
   * The provider said the recipient opted out (SendResult.recipientOptedOut) and the message names a player:
   * awaited before the answer, so the opt-out is committed when the CRM hears the refusal.
   */
  onRecipientOptedOut?: (optOut: { userId: string; recipient: string; provider: string; smsId: string }) => Promise<void>;
  /** Spans for the send, its ledger commits and the provider call (docs/tracing.md); off when absent. */
  tracing?: Tracing;
  /** The players' records' countries (operator.backend sql): they decide how a recipient is read (player-records.ts). */
  playerCountries?: PlayerCountries;
  /** sms.default_region, which decides when no record does. */
  defaultRegion?: string;
  /**
   * Asks the providers of lost sends (by sms_id) whether they have them and records the answers, as the sweep does
   * (src/delivery/lookups.ts `resolveLostSends`). Absent: a retry of a lost send waits for the sweep's answer (503).
   */
  resolveLostSends?: (smsIds: string[]) => Promise<void>;
  /** What messages cost and the budgets they count toward (src/costs/); absent: no cost is kept. */
  costs?: CostBook;
  /**
   * The countries allowed and the routes' rules in force (src/provider-wrappers/routing.ts): each message's
   * routing verdict is decided before its claim (routing-verdict.ts). Absent: every country, routes by their members.
   */
  routing?: Pick<Routing, 'snapshot' | 'countRefusal'>;
  /** quiet_hours: messages inside their quiet hours are held at the claim (claim.ts, quiet-hours.ts). */
  quietHours?: QuietHoursConfig;
  /** Whether a route's member names the sms_id in its receipts, by name (record.ts). */
  receiptsNameSmsId?: (provider: string) => boolean;
}

export interface DispatchOptions {
  /** Epoch ms after which messages not yet handed to a provider are answered `retryable`. */
  deadline: number;
  /** Epoch ms until which a message may wait for provider capacity (throttle); defaults to `deadline`. */
  waitDeadline?: number;
  concurrency: number;
  /** The request's id, carried by the log lines about its messages. */
  requestId?: string;
  /** The request's span (docs/tracing.md): each message's send span is its child. */
  traceparent?: string;
}

/**
 * One dispatch call's messages while it runs: their answers as they come in, and when the last is in. Requests for an
 * activity.id that a call is handling wait for that call and read its answer instead of sending again. One such
 * record per call, where there was a promise, its resolvers and a reaction per message: batch CPU per message
 * 165–216 → 158–194 µs in six alternated pairs, the peak unchanged (bench/README.md "Memory, third round").
 */
interface InFlight {
  messages: PreparedMessage[];
  answers: Array<DispatchResult | undefined>;
  done: Promise<void>;
  /** Each activity.id's first index in `messages`, built when a repeat first asks (so many repeats stay linear). */
  firstIndex?: Map<string, number>;
}

/** A repeat's answer, read from the call that handled its activity.id: the first of its messages with that key. */
function answerFor(call: InFlight, activityKey: string): DispatchResult {
  if (!call.firstIndex) {
    call.firstIndex = new Map();
    for (const [i, m] of call.messages.entries()) if (!call.firstIndex.has(m.activityKey)) call.firstIndex.set(m.activityKey, i);
  }
  const index = call.firstIndex.get(activityKey);
  const answer = index === undefined ? undefined : call.answers[index];
  // Only if that call failed before answering (dispatch rejected for its own request): nothing is known to be sent.
  return answer ?? { outcome: 'retryable', error: `activity.id ${activityKey}: the request sending it failed; retry later` };
}

export function createDispatcher(deps: DispatcherDeps) {
  const queue = deps.queue;
  const claim = createClaimStep({ ...deps, queue });
  const sender = createSendStep(deps);
  const record = createRecordStep({ ...deps, queue });
  /** The call handling each activity.id being dispatched here. */
  const inflight = new Map<string, InFlight>();

  const tracing = deps.tracing ?? TRACING_OFF;

  async function sendAndRecord(message: PreparedMessage, smsId: string, options: DispatchOptions, span?: TraceSpan): Promise<DispatchResult> {
    const started = performance.now();
    const times = { deadline: options.deadline, waitDeadline: options.waitDeadline ?? options.deadline };
    if (!span) {
      const answer = await sender.send(message, smsId, times);
      return record({ message, smsId, answer, seconds: (performance.now() - started) / 1000, requestId: options.requestId });
    }
    // The provider call, with any wait for rate_per_second / max_concurrency: its HTTP request (if any) is the
    // undici instrumentation's CLIENT span under it, and carries it in its traceparent header.
    const call = tracing.startSpan('provider.send', span.traceparent, {
      attributes: { 'sms.provider': message.provider.name, 'sms.segments': message.segments },
    });
    const answer = await call.run(() => sender.send(message, smsId, times));
    if (!answer.ok) call.fail(answer.error, answer.kind);
    call.end();
    const commit = tracing.startCommit('UPDATE', 'messages', span.traceparent);
    commit.setAttribute('ledger.step', 'record');
    const result = await record({ message, smsId, answer, seconds: (performance.now() - started) / 1000, requestId: options.requestId });
    commit.end();
    return result;
  }

  /** One send span per message, under the request's (only when tracing is on). */
  function startSendSpans(messages: PreparedMessage[], options: DispatchOptions): TraceSpan[] | undefined {
    if (!tracing.enabled) return undefined;
    return messages.map((m) =>
      tracing.startSpan('sms.send', options.traceparent, { attributes: { 'sms.activity_id': m.activityKey, 'sms.provider': m.provider.name } }),
    );
  }

  function endSendSpan(span: TraceSpan | undefined, result: DispatchResult): DispatchResult {
    if (!span) return result;
    span.setAttribute('sms.outcome', result.outcome);
    if (result.smsId) span.setAttribute('sms.sms_id', result.smsId);
    if (result.outcome !== 'submitted') span.fail(result.error);
    span.end();
    return result;
  }

  /**
   * Repeats of sends whose process died mid-call (`lostSend`): their providers are asked first, then they are claimed
   * once more, so that the answer decides (found: answered with the sms_id; absent: sent; cannot tell: the uncertain
   * path of docs/crash-windows.md). Replaces their entries of `claims`; a lookup that fails leaves the 503.
   */
  async function resolveLost(toClaim: PreparedMessage[], claims: Claim[], options: DispatchOptions, spans: TraceSpan[] | undefined): Promise<void> {
    if (!deps.resolveLostSends) return;
    const lost = claims.flatMap((c, k) => (!c.send && c.lostSend !== undefined ? [k] : []));
    if (lost.length === 0) return;
    try {
      await deps.resolveLostSends(lost.map((k) => (claims[k] as { lostSend: string }).lostSend));
    } catch (error) {
      deps.logger.error({ err: error, count: lost.length, request_id: options.requestId }, 'lost sends could not be looked up: their retries wait');
      return;
    }
    const again = await claim(
      lost.map((k) => toClaim[k]!),
      options.requestId,
      lost.map((k) => spans?.[k]?.traceparent),
    );
    // Claimed once more only: a send still unresolved (its provider could not answer now) keeps the 503.
    for (const [j, k] of lost.entries()) claims[k] = again[j]!;
  }

  /** Claims, sends and records `prepared`; answers[fresh[k]] is prepared[k]'s answer. */
  async function run(prepared: PreparedMessage[], fresh: number[], answers: InFlight['answers'], options: DispatchOptions): Promise<void> {
    let toClaim: PreparedMessage[];
    try {
      // A claim that reads the players' standings in its transaction (sql backend) reads their records there too,
      // unless where a message may go is decided before the claim: that needs the recipient as its player's record reads it.
      // Then the record is read here once, and the claim keeps that reading (recordRead): its standings statement still
      // sees the record (one statement with the consents, no read of its own), but a reading taken there could differ
      // from the one the verdict allowed, were the record changed in between.
      const routed = deps.routing !== undefined && routingApplies(prepared, deps.routing.snapshot());
      if (deps.recipients?.inClaim && !routed) toClaim = prepared;
      else {
        toClaim = await readWithPlayerRecords(prepared, deps.playerCountries, deps.defaultRegion);
        if (deps.recipients?.inClaim) toClaim = toClaim.map((m): PreparedMessage => ({ ...m, recordRead: true }));
      }
    } catch (error) {
      // The players' records could not be read: nothing is claimed, so the CRM's retry finds these ids untouched.
      deps.logger.error({ err: error, count: prepared.length, request_id: options.requestId }, "players' records unavailable: nothing sent");
      for (const i of fresh) answers[i] = { outcome: 'retryable', error: 'ledger unavailable; nothing was sent, retry later' };
      return;
    }
    // The recipient is read for good only now: where it may go, and the rule of its route, are decided on that.
    if (deps.routing) toClaim = withRoutingVerdicts(toClaim, deps.routing.snapshot(), deps.now(), deps.routing.countRefusal);
    const spans = startSendSpans(toClaim, options);
    const claimStarted = spans && Date.now();
    const claims = await claim(
      toClaim,
      options.requestId,
      spans?.map((s) => s.traceparent),
    );
    if (spans)
      for (const span of spans) {
        const commit = tracing.startCommit('INSERT', 'messages', span.traceparent, claimStarted);
        commit.setAttribute('ledger.step', 'claim');
        commit.end();
      }
    // Send each message as claimed: the claim may have read its recipient again with its player's record.
    toClaim = toClaim.map((m, k) => {
      const c = claims[k]!;
      return c.send && c.message ? c.message : m;
    });
    await resolveLost(toClaim, claims, options, spans);
    const toSend: number[] = [];
    claims.forEach((c, k) => {
      if (c.send) toSend.push(k);
      else answers[fresh[k]!] = endSendSpan(spans?.[k], c.result);
    });
    const sendOne = async (k: number) => {
      const smsId = (claims[k] as Extract<Claim, { send: true }>).smsId;
      answers[fresh[k]!] = endSendSpan(spans?.[k], await sendAndRecord(toClaim[k]!, smsId, options, spans?.[k]));
    };
    // A single send (and any request with one message left to send) needs no worker loop.
    if (toSend.length === 1) return sendOne(toSend[0]!);
    let next = 0;
    const worker = async () => {
      while (next < toSend.length) await sendOne(toSend[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(options.concurrency, toSend.length) }, worker));
  }

  return {
    async dispatch(messages: PreparedMessage[], options: DispatchOptions): Promise<DispatchResult[]> {
      // Nothing is claimed once stopping: the CRM's retry finds these ids untouched.
      if (sender.stopping) return messages.map(() => ({ outcome: 'retryable', error: NOT_SENT_SHUTTING_DOWN.error }));
      let finished!: () => void;
      const mine: InFlight = { messages, answers: new Array(messages.length), done: new Promise<void>((resolve) => (finished = resolve)) };
      // The messages this call sends, by index; the others repeat an activity.id already handled (rare).
      const fresh: number[] = [];
      let repeats: Array<{ index: number; call: InFlight }> | undefined;
      for (const [index, message] of messages.entries()) {
        const call = inflight.get(message.activityKey);
        if (call) (repeats ??= []).push({ index, call });
        else {
          inflight.set(message.activityKey, mine);
          fresh.push(index);
        }
      }
      try {
        if (fresh.length > 0) await run(fresh.length === messages.length ? messages : fresh.map((i) => messages[i]!), fresh, mine.answers, options);
      } finally {
        for (const i of fresh) inflight.delete(messages[i]!.activityKey);
        finished();
      }
      // A repeat in another call waits for that whole call: a single racing a batch on one activity.id gets its answer
      // when the batch has its answers, not when that one message has (no request sends both).
      for (const { index, call } of repeats ?? []) {
        if (call !== mine) await call.done;
        mine.answers[index] = answerFor(call, messages[index]!.activityKey);
      }
      return mine.answers as DispatchResult[];
    },

    /**
     * The send of a held message whose window opened (held-sends.ts), through this dispatcher's send and record
     * steps: the same throttles, deadlines and stop as every send.
     */
    heldSender(options: { router: ProviderRouter; wake: Wake; quietHours: QuietHoursConfig }) {
      const { routing } = deps;
      const decideRoute = routing && ((m: PreparedMessage) => withRoutingVerdicts([m], routing.snapshot(), deps.now(), routing.countRefusal)[0]!);
      return createHeldSender({ ...deps, ...options, queue, send: sender.send, record, ...(decideRoute ? { decideRoute } : {}) });
    },

    /**
     * For a graceful stop: requests in flight finish at once, their messages not yet handed to a provider
     * answered `retryable` and left free to send again, so the CRM's retry can go to another instance instead of
     * its request being cut off when the process exits. Sends under way complete.
     */
    stopSending(): void {
      sender.stopSending();
    },

    /**
     * For a shutdown that cannot wait longer: provider calls still under way are abandoned. The provider may have
     * taken them, so their messages are left `uncertain` (a receipt confirms them; a retry waits
     * sms.ambiguous_retry_after), so the CRM's request gets its answer before the connections close.
     */
    abandonInFlight(): void {
      sender.abandonInFlight();
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;

/**
 * `serve`'s dispatcher, from configuration. Its stop steps: at shutdown, requests in flight answer at once (what was
 * sent is successful, the rest transient for the CRM to retry); provider calls still under way at half the budget (a
 * provider that hangs) are abandoned, their messages left uncertain, so the requests waiting for them are answered
 * before the connections are closed.
 */
export function startDispatcher(
  config: Readonly<Config>,
  deps: Omit<
    DispatcherDeps,
    | 'storeContent'
    | 'repeatTimings'
    | 'sendTimeoutMs'
    | 'onRecipientOptedOut'
    | 'playerCountries'
    | 'defaultRegion'
    | 'resolveLostSends'
    | 'metrics'
    | 'quietHours'
  > & {
    /** The held sends outbox's port (absent when its loop does not run here): bound to this dispatcher's held sender. */
    heldSends?: HeldSendPort | undefined;
    router: ProviderRouter;
    wake: Wake;
    backend: OperatorBackend;
    /** The providers a retry of a lost send asks, as the sweep does (src/delivery/lookups.ts). */
    providers: readonly SmsProvider[];
    metrics?: SendMetrics & LookupObservers['metrics'];
  },
  shutdown: Shutdown,
): Dispatcher {
  const { backend, providers, heldSends, router, wake, ...rest } = deps;
  const lookups = lookupOptionsOf(config, providers);
  const observers = { logger: deps.logger, ...(deps.metrics ? { metrics: deps.metrics } : {}) };
  const dispatcher = createDispatcher({
    ...rest,
    resolveLostSends: async (smsIds) => {
      await resolveLostSends(deps.db, deps.now(), lookups, observers, smsIds);
    },
    storeContent: config.ledger.store_content,
    repeatTimings: { dispatchLeaseMs: config.sms.dispatch_lease, ambiguousRetryAfterMs: config.sms.ambiguous_retry_after },
    sendTimeoutMs: config.sms.send_timeout,
    playerCountries: backend.playerCountries && ((userIds) => backend.playerCountries!(userIds)),
    defaultRegion: config.sms.default_region,
    onRecipientOptedOut: createProviderOptOuts({ db: deps.db, backend, recipients: deps.recipients, now: deps.now, logger: deps.logger }),
    quietHours: config.quiet_hours,
    receiptsNameSmsId: (provider) => router.byName(provider)?.receiptsNameSmsId === true,
  });
  heldSends?.bind(dispatcher.heldSender({ router, wake, quietHours: config.quiet_hours }));
  shutdown.add('sends', 'stopping the sends', () => dispatcher.stopSending());
  shutdown.after(shutdown.budgetMs / 2, () => dispatcher.abandonInFlight());
  return dispatcher;
}
