/**
 * The default backend: player data in the gateway's own database (loaded with the admin API or `import users`).
 * A credit here is the ledger row itself; the operator's systems read `operator_credits` to pay it out.
 */
import type { Kysely } from 'kysely';
import { findCreditByKey, insertCreditUnlessKnown, recordCreditOutcome, type CreditRow } from '../ledger/credits.js';
import {
  bonusExists,
  findConsents,
  findReconciliationPage,
  findUser,
  listBonuses,
  userExists,
  writeConsents,
} from '../ledger/operator-data.js';
import type { Database } from '../ledger/schema.js';
import type { BackendResult, CreditAnswer, CreditRequest, OperatorBackend, ReconciliationRun } from './backend.js';
import { oneActionKey } from './crm-references.js';
import { newCreditRow } from './credit-rows.js';
import { CONSENT_TYPES, RECONCILIATION_FIELDS, type ReconciliationField, type UserRecord } from './crm-shapes.js';

export interface SqlBackendOptions {
  db: Kysely<Database>;
  now: () => number;
  pageSize: number;
}

const unknownUser = (userId: string) => ({ ok: false, kind: 'not_found', error: `user_id: no user "${userId}"` }) as const;

export function createSqlBackend({ db, now, pageSize }: SqlBackendOptions): OperatorBackend {
  return {
    name: 'sql',

    async userDetails(userId) {
      const row = await findUser(db, userId);
      return row ? { ok: true, value: JSON.parse(row.record_json) as UserRecord } : unknownUser(userId);
    },

    async userConsents(userId) {
      if (!(await userExists(db, userId))) return unknownUser(userId);
      const stored = new Map((await findConsents(db, userId)).map((r) => [r.type, r.opted_in === 1]));
      // A type never set is reported as opted out: consent is not assumed (DESIGN: player data).
      return { ok: true, value: { consents: CONSENT_TYPES.map((type) => ({ opted_in: stored.get(type) ?? false, type })) } };
    },

    async updateConsents(userId, changes) {
      return db.transaction().execute(async (trx): Promise<BackendResult<void>> => {
        if (!(await userExists(trx, userId))) return unknownUser(userId);
        const rows = new Map(changes.map((c) => [c.type, { user_id: userId, type: c.type, opted_in: c.opted_in ? 1 : 0 }]));
        await writeConsents(trx, [...rows.values()], now());
        return { ok: true, value: undefined };
      });
    },

    async userBlocks(userId) {
      const row = await findUser(db, userId);
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
      return { ok: true, value: { Data: await listBonuses(db), Success: true, Errors: [] } };
    },

    credit: (request) => creditOnce(db, request, now()),

    reconcile(field: ReconciliationField): ReconciliationRun {
      const selector = RECONCILIATION_FIELDS[field];
      // The list is read page by page (no long transaction), so it describes the data as of the run's start.
      const startedAt = new Date(now()).toISOString();
      async function* pages() {
        let after: string | null = null;
        for (;;) {
          const ids = await findReconciliationPage(db, selector, after, pageSize);
          if (ids.length > 0) yield ids;
          if (ids.length < pageSize) return;
          after = ids[ids.length - 1]!;
        }
      }
      return { pages: pages(), timestamp: () => startedAt };
    },

    async close() {},
  };
}

const repeated = (row: CreditRow): BackendResult<CreditAnswer> => ({ ok: true, value: { creditId: String(row.id), repeated: true } });

/**
 * Credits at most once per one-action key, in one transaction: a known key answers the first credit; otherwise the
 * user and bonus code are checked and the row inserted. SQLite runs one write transaction at a time; on PostgreSQL
 * the unique constraint makes a concurrent twin wait and then find the first row.
 */
async function creditOnce(db: Kysely<Database>, request: CreditRequest, at: number): Promise<BackendResult<CreditAnswer>> {
  const key = oneActionKey(request.refs, request.userId);
  return db.transaction().execute(async (trx): Promise<BackendResult<CreditAnswer>> => {
    const seen = key === null ? undefined : await findCreditByKey(trx, key);
    if (seen?.state === 'done') return repeated(seen);
    if (!(await userExists(trx, request.userId))) return unknownUser(request.userId);
    if (!(await bonusExists(trx, request.bonusCode))) {
      return { ok: false, kind: 'invalid', error: `bonus_code: "${request.bonusCode}" is not in the bonus list` };
    }
    if (seen) {
      // Left failed or pending by the http backend before a switch to sql: this attempt completes it.
      await recordCreditOutcome(trx, seen.id, { state: 'done', http_status: null, answer_json: null }, at);
      return { ok: true, value: { creditId: String(seen.id), repeated: false } };
    }
    const id = await insertCreditUnlessKnown(trx, newCreditRow(request, key, 'done', at));
    if (id !== undefined) return { ok: true, value: { creditId: String(id), repeated: false } };
    return repeated((await findCreditByKey(trx, key!))!);
  });
}
