/**
 * The one-action rule (docs/crm-interface.md §C) in front of a credit that is forwarded over the network. A transaction
 * must not stay open across the call (docs/design.md §8), so the credit is claimed first as a committed `pending`
 * row, forwarded, then marked `done` or `failed`:
 * - a repeat of a `done` credit answers it again and forwards nothing;
 * - a repeat while the first is still under way waits for it in this process, or answers busy (503) on another;
 * - a repeat of a `failed` credit (or of one left `pending` by a process that died) forwards again. The X-Crm-*
 *   headers go along, so the platform can recognise a repeat of a call whose answer we never saw.
 */
import type { Kysely } from 'kysely';
import { findCreditByKey, insertCreditUnlessKnown, reclaimCredit, recordCreditOutcome } from '../../ledger/credits.js';
import type { Database } from '../../ledger/schema.js';
import { BackendError, type BackendResult, type CreditAnswer, type CreditRequest } from '../backend.js';
import { oneActionKey } from '../../crm/references.js';
import { newCreditRow } from '../credits/credit-rows.js';
import { stringifyExact } from '../../http/exact-json.js';
import type { UpstreamAnswer } from './upstream.js';

export interface HttpCreditsDeps {
  db: Kysely<Database>;
  now: () => number;
  /** A `pending` row older than this belongs to a process that died. */
  leaseMs: number;
  forward: (request: CreditRequest) => Promise<BackendResult<UpstreamAnswer>>;
}

/** What is kept of the platform's answer, for the operator's own records. */
const KEPT_ANSWER_CHARS = 10_000;

export function createHttpCredits(deps: HttpCreditsDeps): (request: CreditRequest) => Promise<BackendResult<CreditAnswer>> {
  const { db, now } = deps;
  const inflight = new Map<string, Promise<BackendResult<CreditAnswer>>>();

  async function forwardAndRecord(id: number, request: CreditRequest): Promise<BackendResult<CreditAnswer>> {
    let result: BackendResult<UpstreamAnswer>;
    try {
      result = await deps.forward(request);
    } catch (error) {
      await recordCreditOutcome(db, id, { state: 'failed', http_status: null, answer_json: null }, now());
      throw error;
    }
    const answer = result.ok ? result.value : null;
    await recordCreditOutcome(
      db,
      id,
      { state: result.ok ? 'done' : 'failed', http_status: answer?.status ?? null, answer_json: answer ? answer.text.slice(0, KEPT_ANSWER_CHARS) : null },
      now(),
    );
    return result.ok ? { ok: true, value: { creditId: String(id), repeated: false } } : result;
  }

  async function claimAndForward(request: CreditRequest, key: string | null): Promise<BackendResult<CreditAnswer>> {
    const at = now();
    let id = await insertCreditUnlessKnown(db, newCreditRow(request, key, 'pending', at));
    if (id === undefined) {
      const seen = (await findCreditByKey(db, key!))!;
      if (seen.state === 'done') return { ok: true, value: { creditId: String(seen.id), repeated: true } };
      if (!(await reclaimCredit(db, seen.id, stringifyExact(request.body), at, at - deps.leaseMs))) {
        return { ok: false, kind: 'busy', error: 'a credit with the same activity, action, user and trigger hash is being processed; retry shortly' };
      }
      id = seen.id;
    }
    return forwardAndRecord(id, request);
  }

  return async (request) => {
    const key = oneActionKey(request.refs, request.userId);
    if (key === null) return claimAndForward(request, null);
    const running = inflight.get(key);
    if (running) {
      // The first of two concurrent twins decides for both; the second credits nothing.
      const first = await running.catch((error: unknown) => {
        if (error instanceof BackendError) return { ok: false, kind: error.kind, error: error.message } as const;
        throw error;
      });
      return first.ok ? { ok: true, value: { ...first.value, repeated: true } } : first;
    }
    const attempt = claimAndForward(request, key).finally(() => inflight.delete(key));
    inflight.set(key, attempt);
    return attempt;
  };
}
