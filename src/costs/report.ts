/**
 * The cost report of /admin/costs and the console's costs page (docs/costs.md "Reports"): spend from the daily rollup,
 * grouped as asked, with the delivered share and the cost per delivered message, as JSON rows or CSV. Amounts are
 * exact decimal text (src/kit/money.ts); amounts in different currencies are never added together.
 */
import type { Kysely } from 'kysely';
import { COST_DIMENSIONS, readCostReport, type CostDimension, type CostReportRow } from '../ledger/costs.js';
import type { Database } from '../ledger/schema.js';
import { divideMicros, formatMicros } from '../kit/money.js';
import { readQueryParameters } from '../http/query-parameters.js';

const DAY_MS = 86_400_000;
/** The longest range one report reads: a year of days. */
const MAX_DAYS = 366;
/** Rows one report answers at most (a grouping by activity over a long range can be large). */
export const MAX_REPORT_ROWS = 10_000;

/** The report's group names as the query spells them (brand, activity, action_group) and their columns. */
const GROUP_NAMES: ReadonlyMap<string, CostDimension> = new Map([
  ['day', 'day'],
  ['provider', 'provider'],
  ['country', 'country'],
  ['brand', 'brand_id'],
  ['activity', 'activity_id'],
  ['action_group', 'action_group_id'],
]);

export interface CostQuery {
  fromDay: number;
  toDay: number;
  groupBy: CostDimension[];
  format: 'json' | 'csv';
}

const dayText = (day: number) => new Date(day).toISOString().slice(0, 10);

function readDay(name: string, text: string): number | string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const at = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(at) || dayText(at) !== text) return `${name}: must be a date as YYYY-MM-DD (got ${JSON.stringify(text.slice(0, 40))})`;
  return at;
}

/**
 * The report asked for by a query string: `from`, `to` (UTC dates, inclusive; default the last 30 days to today),
 * `group_by` (a comma list of day, provider, country, brand, activity, action_group; default day,provider), `format`
 * (json or csv; or an Accept of text/csv). Or the first problem, naming the parameter. Pure.
 */
export function readCostQuery(
  params: URLSearchParams,
  now: number,
  accept: string | undefined,
  options: { form?: boolean } = {},
): { ok: true; query: CostQuery } | { ok: false; error: string } {
  const read = readQueryParameters(params, ['from', 'to', 'group_by', 'format'], options);
  if (!read.ok) return read;
  const values = new Map(read.values);
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const to = values.has('to') ? readDay('to', values.get('to')!) : today;
  if (typeof to === 'string') return { ok: false, error: to };
  const from = values.has('from') ? readDay('from', values.get('from')!) : to - 29 * DAY_MS;
  if (typeof from === 'string') return { ok: false, error: from };
  if (from > to) return { ok: false, error: 'from: must not be after to' };
  if ((to - from) / DAY_MS + 1 > MAX_DAYS) return { ok: false, error: `from: the range is longer than ${MAX_DAYS} days` };
  const groupBy: CostDimension[] = [];
  for (const name of (values.get('group_by') ?? 'day,provider').split(',').map((s) => s.trim())) {
    if (name === '') continue;
    const column = GROUP_NAMES.get(name);
    if (!column) return { ok: false, error: `group_by: ${JSON.stringify(name.slice(0, 40))} is not one of ${[...GROUP_NAMES.keys()].join(', ')}` };
    if (!groupBy.includes(column)) groupBy.push(column);
  }
  const format = values.get('format') ?? (accept && /text\/csv/i.test(accept) ? 'csv' : 'json');
  if (format !== 'json' && format !== 'csv') return { ok: false, error: `format: must be json or csv (got ${JSON.stringify(format.slice(0, 20))})` };
  return { ok: true, query: { fromDay: from, toDay: to, groupBy: COST_DIMENSIONS.filter((d) => groupBy.includes(d)), format } };
}

/** One row of the answer: the groups, then the figures as exact decimal text. */
export interface CostAnswerRow {
  day?: string;
  provider?: string;
  country?: string;
  brand_id?: string;
  activity_id?: string;
  action_group_id?: string;
  /** '' for messages no rate and no provider priced. */
  currency: string;
  messages: number;
  segments: number;
  delivered: number;
  /** delivered / messages, to four decimals; null with no messages. */
  delivered_share: number | null;
  spend: string;
  reported_spend: string;
  estimated_spend: string;
  /** spend / delivered, rounded half to even to the micro-unit; null with none delivered. */
  cost_per_delivered: string | null;
}

export function answerRowOf(row: CostReportRow): CostAnswerRow {
  const currency = row.currency;
  const perDelivered = divideMicros(row.costMicros, row.delivered);
  const out: CostAnswerRow = {
    ...(row.day !== undefined ? { day: dayText(row.day) } : {}),
    ...(row.provider !== undefined ? { provider: row.provider } : {}),
    ...(row.country !== undefined ? { country: row.country } : {}),
    ...(row.brand_id !== undefined ? { brand_id: row.brand_id } : {}),
    ...(row.activity_id !== undefined ? { activity_id: row.activity_id } : {}),
    ...(row.action_group_id !== undefined ? { action_group_id: row.action_group_id } : {}),
    currency,
    messages: Number(row.messages),
    segments: Number(row.segments),
    delivered: Number(row.delivered),
    delivered_share: row.messages > 0n ? Math.round((Number(row.delivered) / Number(row.messages)) * 10_000) / 10_000 : null,
    spend: formatMicros(row.costMicros, currency),
    reported_spend: formatMicros(row.reportedMicros, currency),
    estimated_spend: formatMicros(row.costMicros - row.reportedMicros, currency),
    cost_per_delivered: perDelivered === null ? null : formatMicros(perDelivered, currency),
  };
  return out;
}

export async function buildCostReport(db: Kysely<Database>, query: CostQuery): Promise<{ rows: CostAnswerRow[]; truncated: boolean }> {
  const rows = await readCostReport(db, query, query.groupBy, MAX_REPORT_ROWS + 1);
  return { rows: rows.slice(0, MAX_REPORT_ROWS).map(answerRowOf), truncated: rows.length > MAX_REPORT_ROWS };
}

const CSV_FIGURES = [
  'currency',
  'messages',
  'segments',
  'delivered',
  'delivered_share',
  'spend',
  'reported_spend',
  'estimated_spend',
  'cost_per_delivered',
] as const;

/** A CSV field as RFC 4180 writes it; a leading = + - @ is prefixed with ' so a spreadsheet never runs it as a formula. */
function csvField(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text) && !/^-?\d/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function costReportCsv(groupBy: readonly CostDimension[], rows: readonly CostAnswerRow[]): string {
  const columns = [...groupBy, ...CSV_FIGURES];
  const lines = [columns.join(',')];
  for (const row of rows) lines.push(columns.map((c) => csvField((row as unknown as Record<string, string | number | null>)[c])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
