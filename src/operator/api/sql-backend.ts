/**
 * The default backend: player data in the gateway's own database (loaded with the admin API or `import users`).
 * A credit here is the ledger row itself; the operator's systems read `operator_credits` to pay it out.
 */
import type { Kysely } from 'kysely';
import { findCreditByKey, insertCreditUnlessKnown, recordCreditOutcome } from '../../ledger/credits.js';
import { markCreditDue } from '../../ledger/credit-delivery.js';
import {
  bonusExists,
  findConsents,
  findPlayerCountries,
  findReconciliationPage,
  findUser,
  listBonuses,
  userExists,
  writeConsents,
} from '../../ledger/operator-data.js';
import type { Database } from '../../ledger/schema.js';
import { enqueueEvent } from '../../ledger/events.js';
import { originOfRecord, userConsentsEvent } from '../../crm/user-events.js';
import type { BackendResult, CreditAnswer, CreditRequest, OperatorBackend, PlayerCountry, ReconciliationRun } from '../backend.js';
import { oneActionKey } from '../../crm/references.js';
import { consentEntryOf, consentRowOf } from '../players/consent-rows.js';
import { newCreditRow } from '../credits/credit-rows.js';
import { CONSENT_TYPES, RECONCILIATION_FIELDS, type ReconciliationField, userRecordSchema } from '../../crm/shapes.js';
import { describeFirstIssue } from '../../http/zod-issue.js';
import { inTransaction } from '../../ledger/engine/db.js';

export interface SqlBackendOptions {
  db: Kysely<Database>;
  /** Where the CRM's reads go (the ledger's read connection, src/ledger/engine/db.ts); `db` when absent. */
  readDb?: Kysely<Database>;
  /** Where reconciliation reads (a read-only connection on SQLite, see create-backend.ts); `db` when absent. */
  scanDb?: Kysely<Database>;
  close?: () => Promise<void>;
  now: () => number;
  pageSize: number;
}

const unknownUser = (userId: string) => ({ ok: false, kind: 'not_found', error: `user_id: no user "${userId}"` }) as const;

export function createSqlBackend({ db, readDb = db, scanDb = db, now, pageSize, close }: SqlBackendOptions): OperatorBackend {
  return {
    name: 'sql',

    async userDetails(userId) {
      const row = await findUser(readDb, userId);
      if (!row) return unknownUser(userId);
      // Records loaded before the CRM's rules were checked on loading are brought to its shape here (verified_at ""),
      // and one that still breaks a rule is refused by name rather than served for the CRM to reject.
      const stored: unknown = JSON.parse(row.record_json);
      const record = userRecordSchema.safeParse(stored);
      if (record.success) return { ok: true, value: record.data };
      return {
        ok: false,
        kind: 'bad_record',
        error: `stored record of user "${userId}" breaks the CRM's rules: ${describeFirstIssue(record.error, stored)}; load it again with PUT /admin/users`,
      };
    },

    async userConsents(userId) {
      if (!(await userExists(readDb, userId))) return unknownUser(userId);
      const stored = new Map((await findConsents(readDb, userId)).map((r) => [r.type, r]));
      // A type never set is reported as opted out: consent is never assumed (docs/connecting-the-crm.md "Player data").
      return { ok: true, value: { consents: CONSENT_TYPES.map((type) => consentEntryOf(type, stored.get(type))) } };
    },

    async updateConsents(userId, changes) {
      const rows = new Map(changes.map((c) => [c.type, consentRowOf(userId, c)]));
      // The change and its User Consents event commit together. The unsubscribe flow (docs/crm-interface.md,
      // POST /userconsents) has the operator send the event after processing, so it goes out even when the stored
      // value was already the one asked for: the CRM then reads GET /userconsents as step 4 says.
      return inTransaction(db, async (trx) => {
        const user = await findUser(trx, userId);
        if (!user) return unknownUser(userId);
        const at = now();
        await writeConsents(trx, [...rows.values()], at);
        await enqueueEvent(trx, userConsentsEvent(userId, originOfRecord(user.record_json), at), at);
        return { ok: true, value: undefined } as const;
      });
    },

    async userBlocks(userId) {
      const row = await findUser(readDb, userId);
      if (!row) return unknownUser(userId);
      return {
        ok: true,
        value: {
          blocks: [
            { active: row.is_blocked === 1, type: 'Blocked', note: row.block_note },
            { active: row.is_excluded === 1, type: 'Excluded', note: row.exclusion_note },
          ],
        },
      };
    },

    async bonusList() {
      return { ok: true, value: { Data: await listBonuses(readDb), Success: true, Errors: [] } };
    },

    credit: (request) => creditOnce(db, request, now()),

    reconcile(field: ReconciliationField, product?: string): ReconciliationRun {
      const selector = product === undefined ? RECONCILIATION_FIELDS[field] : { ...RECONCILIATION_FIELDS[field], product };
      // Pages are read without one long transaction (it would hold back SQLite checkpoints and PostgreSQL vacuum for
      // the whole run), so a user changed mid-run may or may not be listed; `timestamp` is when the run started.
      const startedAt = new Date(now()).toISOString();
      async function* pages() {
        let after: string | null = null;
        for (;;) {
          const page = await findReconciliationPage(scanDb, selector, after, pageSize);
          if (page.count > 0) yield page;
          if (page.count < pageSize) return;
          after = page.last;
        }
      }
      return { pages: pages(), timestamp: () => startedAt };
    },

    async playerCountries(userIds) {
      const places = new Map<string, PlayerCountry>();
      // A record loaded before the CRM's rules were checked may hold anything there: only strings are read.
      const text = (v: unknown) => (typeof v === 'string' ? v : '');
      for (const [id, row] of await findPlayerCountries(readDb, userIds))
        places.set(id, { country: text(row.country), mobilePrefix: text(row.mobile_prefix), mobile: row.mobile_e164 });
      return places;
    },

    async close() {
      await close?.();
    },
  };
}

/** Carries a refusal out of the transaction, so the credit row inserted first is rolled back. */
class CreditRefused extends Error {
  constructor(readonly result: BackendResult<CreditAnswer>) {
    super('credit refused');
  }
}

/**
 * Credits at most once per one-action key, in one transaction that begins with the insert: the unique key decides
 * between concurrent twins (SQLite: the write lock is taken by the first statement, so a twin waits for it instead
 * of failing on a stale snapshot; PostgreSQL: a twin's insert waits for the first to commit, then yields). The user
 * and bonus code are checked after the insert, and a refusal rolls the row back.
 */
async function creditOnce(db: Kysely<Database>, request: CreditRequest, at: number): Promise<BackendResult<CreditAnswer>> {
  const key = oneActionKey(request.refs, request.userId);
  try {
    return await inTransaction(db, async (trx): Promise<BackendResult<CreditAnswer>> => {
      let id = await insertCreditUnlessKnown(trx, newCreditRow(request, key, 'done', at));
      if (id === undefined) {
        const seen = (await findCreditByKey(trx, key!))!;
        if (seen.state === 'done') return { ok: true, value: { creditId: String(seen.id), repeated: true } };
        // Left failed or pending by the http backend before a switch to sql: this attempt completes it.
        await recordCreditOutcome(trx, seen.id, { state: 'done', http_status: null, answer_json: null }, at);
        await markCreditDue(trx, seen.id, at);
        id = seen.id;
      }
      if (!(await userExists(trx, request.userId))) throw new CreditRefused(unknownUser(request.userId));
      if (!(await bonusExists(trx, request.bonusCode))) {
        throw new CreditRefused({ ok: false, kind: 'invalid', error: `bonus_code: "${request.bonusCode}" is not in the bonus list` });
      }
      return { ok: true, value: { creditId: String(id), repeated: false } };
    });
  } catch (error) {
    if (error instanceof CreditRefused) return error.result;
    throw error;
  }
}
