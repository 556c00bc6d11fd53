/**
 * Queries of what messages cost (docs/costs.md): a message's cost columns, the daily rollup `cost_daily` (written in
 * the transaction that changes a message's cost or delivery, read by /admin/costs and the console), and the budgets'
 * spend `budget_spend` (locked, read and added to in the claim's transaction, so every instance sees one figure).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import { dialectFlagsOf } from './engine/flags.js';
import { ROWS_PER_STATEMENT, statementChunks } from './chunks.js';
import type { CostDailyTable, CostSource, Database, MessagesTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** The dimensions of one cost_daily row ('' for none). */
export type CostRollupKey = Pick<CostDailyTable, 'day' | 'provider' | 'country' | 'brand_id' | 'activity_id' | 'action_group_id' | 'currency'>;

/** A change to one rollup row: counts and micro-units to add (negative to take back). */
export interface CostRollupChange {
  key: CostRollupKey;
  messages: number;
  segments: number;
  delivered: number;
  costMicros: bigint;
  reportedMicros: bigint;
}

const KEY_COLUMNS = ['day', 'provider', 'country', 'brand_id', 'activity_id', 'action_group_id', 'currency'] as const;

function keyText(k: CostRollupKey): string {
  return JSON.stringify([k.day, k.provider, k.country, k.brand_id, k.activity_id, k.action_group_id, k.currency]);
}

/**
 * Adds the changes to their rows, summed per row and in key order: PostgreSQL refuses an upsert touching one row
 * twice, and one order keeps two instances from deadlocking over the same rows. Changes that sum to nothing are left out.
 */
export async function addToCostRollup(db: Db, changes: readonly CostRollupChange[]): Promise<void> {
  const rows = new Map<string, CostRollupChange>();
  for (const c of changes) {
    const k = keyText(c.key);
    const row = rows.get(k);
    if (!row) rows.set(k, { ...c });
    else {
      row.messages += c.messages;
      row.segments += c.segments;
      row.delivered += c.delivered;
      row.costMicros += c.costMicros;
      row.reportedMicros += c.reportedMicros;
    }
  }
  const sorted = [...rows.entries()]
    .filter(([, r]) => r.messages !== 0 || r.segments !== 0 || r.delivered !== 0 || r.costMicros !== 0n || r.reportedMicros !== 0n)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, r]) => r);
  for (const part of statementChunks(sorted, ROWS_PER_STATEMENT)) {
    await db
      .insertInto('cost_daily')
      .values(
        part.map((r) => ({
          ...r.key,
          messages: r.messages,
          segments: r.segments,
          delivered: r.delivered,
          cost_micros: r.costMicros.toString(),
          reported_micros: r.reportedMicros.toString(),
        })),
      )
      .onConflict((oc) =>
        oc.columns([...KEY_COLUMNS]).doUpdateSet((eb) => ({
          messages: eb('cost_daily.messages', '+', eb.ref('excluded.messages')),
          segments: eb('cost_daily.segments', '+', eb.ref('excluded.segments')),
          delivered: eb('cost_daily.delivered', '+', eb.ref('excluded.delivered')),
          cost_micros: eb('cost_daily.cost_micros', '+', eb.ref('excluded.cost_micros')),
          reported_micros: eb('cost_daily.reported_micros', '+', eb.ref('excluded.reported_micros')),
        })),
      )
      .execute();
  }
}

/** A message's cost columns as written: null amount and currency when it is not counted. */
export interface MessageCost {
  smsId: string;
  micros: bigint | null;
  currency: string | null;
  source: CostSource | null;
}

/** Writes each message's cost; one UPDATE per distinct cost (most messages of a group share one). */
export async function setMessageCosts(db: Db, costs: readonly MessageCost[]): Promise<void> {
  const groups = new Map<string, { cost: MessageCost; ids: string[] }>();
  for (const c of costs) {
    const k = JSON.stringify([c.micros?.toString() ?? null, c.currency, c.source]);
    const group = groups.get(k);
    if (group) group.ids.push(c.smsId);
    else groups.set(k, { cost: c, ids: [c.smsId] });
  }
  for (const { cost, ids } of groups.values()) {
    for (const part of statementChunks(ids, ROWS_PER_STATEMENT)) {
      await db
        .updateTable('messages')
        .set({ cost_micros: cost.micros === null ? null : cost.micros.toString(), cost_currency: cost.currency, cost_source: cost.source })
        .where('sms_id', 'in', part)
        .execute();
    }
  }
}

/** What the cost path reads of a message to change its cost or count its delivery. */
export type CostTarget = Pick<
  MessagesTable,
  | 'sms_id'
  | 'provider'
  | 'provider_message_id'
  | 'country'
  | 'activity_json'
  | 'created_at'
  | 'segments'
  | 'state'
  | 'delivery_status'
  | 'cost_micros'
  | 'cost_currency'
  | 'cost_source'
>;

export async function findCostTargets(db: Db, smsIds: readonly string[]): Promise<CostTarget[]> {
  const found: CostTarget[] = [];
  for (const part of statementChunks([...new Set(smsIds)], ROWS_PER_STATEMENT)) {
    found.push(
      ...(await db
        .selectFrom('messages')
        .select([
          'sms_id',
          'provider',
          'provider_message_id',
          'country',
          'activity_json',
          'created_at',
          'segments',
          'state',
          'delivery_status',
          'cost_micros',
          'cost_currency',
          'cost_source',
        ])
        .where('sms_id', 'in', part)
        .execute()),
    );
  }
  return found;
}

/** One budget's period. */
export interface BudgetPeriodKey {
  budget: string;
  periodStart: number;
  currency: string;
}

const budgetKeyText = (k: BudgetPeriodKey) => `${k.budget}\u0000${k.periodStart}`;

/**
 * What each budget period has spent, its rows locked until the transaction ends (PostgreSQL: FOR UPDATE, after the
 * rows are made to exist; SQLite: the transaction already holds the database's one write lock). Locked in key order,
 * so two instances claiming under the same budgets wait for each other instead of deadlocking.
 */
export async function lockBudgetSpend(db: Transaction<Database>, keys: readonly BudgetPeriodKey[]): Promise<Map<string, bigint>> {
  const unique = [...new Map(keys.map((k) => [budgetKeyText(k), k])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
  const spent = new Map<string, bigint>();
  if (unique.length === 0) return spent;
  await db
    .insertInto('budget_spend')
    .values(unique.map((k) => ({ budget: k.budget, period_start: k.periodStart, currency: k.currency, spent_micros: 0 })))
    .onConflict((oc) => oc.columns(['budget', 'period_start']).doNothing())
    .execute();
  const postgres = dialectFlagsOf(db).kind === 'postgres';
  for (const k of unique) {
    let query = db.selectFrom('budget_spend').select('spent_micros').where('budget', '=', k.budget).where('period_start', '=', k.periodStart);
    if (postgres) query = query.forUpdate();
    const row = await query.executeTakeFirst();
    spent.set(budgetKeyText(k), BigInt(row?.spent_micros ?? 0));
  }
  return spent;
}

export { budgetKeyText };

/** Adds to each budget period's spend (negative takes back): summed per row, in key order. */
export async function addBudgetSpend(db: Db, changes: ReadonlyArray<BudgetPeriodKey & { micros: bigint }>): Promise<void> {
  const sums = new Map<string, BudgetPeriodKey & { micros: bigint }>();
  for (const c of changes) {
    const k = budgetKeyText(c);
    const row = sums.get(k);
    if (row) row.micros += c.micros;
    else sums.set(k, { ...c });
  }
  const sorted = [...sums.entries()].filter(([, r]) => r.micros !== 0n).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [, r] of sorted) {
    await db
      .insertInto('budget_spend')
      .values({ budget: r.budget, period_start: r.periodStart, currency: r.currency, spent_micros: r.micros.toString() })
      .onConflict((oc) =>
        oc.columns(['budget', 'period_start']).doUpdateSet((eb) => ({ spent_micros: eb('budget_spend.spent_micros', '+', eb.ref('excluded.spent_micros')) })),
      )
      .execute();
  }
}

/** The dimensions a cost report may group by. */
export const COST_DIMENSIONS = ['day', 'provider', 'country', 'brand_id', 'activity_id', 'action_group_id'] as const;
export type CostDimension = (typeof COST_DIMENSIONS)[number];

export interface CostReportRow {
  day?: number;
  provider?: string;
  country?: string;
  brand_id?: string;
  activity_id?: string;
  action_group_id?: string;
  currency: string;
  messages: bigint;
  segments: bigint;
  delivered: bigint;
  costMicros: bigint;
  reportedMicros: bigint;
}

/**
 * Sums of cost_daily over the days from `fromDay` to `toDay` (inclusive, UTC day starts), grouped by `groupBy` and
 * always by currency (amounts in different currencies are never added). Ordered by the groups, then currency.
 */
export async function readCostReport(
  db: Db,
  range: { fromDay: number; toDay: number },
  groupBy: readonly CostDimension[],
  limit: number,
): Promise<CostReportRow[]> {
  const columns = [...groupBy, 'currency'] as const;
  const rows = await db
    .selectFrom('cost_daily')
    .select([
      ...columns.map((c) => sql.ref<string>(c).as(c)),
      sql<string>`sum(messages)`.as('messages'),
      sql<string>`sum(segments)`.as('segments'),
      sql<string>`sum(delivered)`.as('delivered'),
      sql<string>`sum(cost_micros)`.as('cost_micros'),
      sql<string>`sum(reported_micros)`.as('reported_micros'),
    ])
    .where('day', '>=', range.fromDay)
    .where('day', '<=', range.toDay)
    .groupBy(columns.map((c) => sql.ref(c)))
    // Groups that sum to nothing (messages counted at a claim and taken back when their send sent nothing) are left out.
    .having(sql<boolean>`sum(messages) <> 0 or sum(delivered) <> 0 or sum(cost_micros) <> 0`)
    .orderBy(columns.map((c) => sql`${sql.ref(c)} asc`))
    .limit(limit)
    .execute();
  return rows.map((r) => {
    const row = r as unknown as Record<string, string | number>;
    const out: CostReportRow = {
      currency: String(row.currency),
      messages: BigInt(row.messages ?? 0),
      segments: BigInt(row.segments ?? 0),
      delivered: BigInt(row.delivered ?? 0),
      costMicros: BigInt(row.cost_micros ?? 0),
      reportedMicros: BigInt(row.reported_micros ?? 0),
    };
    for (const c of groupBy) (out as unknown as Record<string, unknown>)[c] = c === 'day' ? Number(row[c]) : String(row[c]);
    return out;
  });
}
