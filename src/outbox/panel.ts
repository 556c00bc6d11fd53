/**
 * An outbox kind's panel on the console's dashboard, written by its area beside its dead list: what it reads (from
 * maintained counters and index ranges, so the dashboard's cost does not grow with the tables), how it shows it, and
 * the link to its dead list. src/console/pages.ts shows the panels in the order of the registry (src/outboxes.ts).
 */
import { html } from 'hono/html';
import type { Kysely } from 'kysely';
import type { Database } from '../ledger/schema.js';
import { age, when } from './dead-list-frame.js';

type Html = ReturnType<typeof html>;

export interface OutboxPanel<D = any> {
  /** The section's id on the page ("outbox", "crm-events") and its heading. */
  section: string;
  heading: string;
  load(readDb: Kysely<Database>): Promise<D>;
  /** `at`: when the dashboard was read, for the ages. */
  render(data: D, at: number): Html;
  /** The link under the panel to the kind's dead list. */
  deadList: { href: string; text: string };
}

/** An outbox's owed, of which retrying, dead, and how long the oldest owed has waited: one row, each cell named. */
export function renderOwedRow(
  at: number,
  table: string,
  attribute: string,
  counts: { owed: [key: string, n: number]; retrying: number; dead: number; oldestAt: number | null },
  titles: { owed: string; dead: string; oldest: string },
  /** A further count of the owed, after retrying (the event outbox's events the broker routed nowhere). */
  also?: { key: string; label: string; title: string; n: number },
) {
  const { oldestAt } = counts;
  return html`<div class="scroll"><table data-table="${table}"><thead><tr><th title="${titles.owed}">owed</th><th title="of those, failed at least once">retrying</th>${also ? html`<th title="${also.title}">${also.label}</th>` : ''}<th title="${titles.dead}">dead</th><th title="${titles.oldest}">oldest owed</th></tr></thead>
<tbody><tr><td ${attribute}="${counts.owed[0]}">${counts.owed[1]}</td><td ${attribute}="retrying">${counts.retrying}</td>${also ? html`<td ${attribute}="${also.key}">${also.n}</td>` : ''}<td ${attribute}="dead">${counts.dead}</td>
<td ${attribute}="oldest" title="${oldestAt === null ? '' : `${when(oldestAt)} UTC`}">${oldestAt === null ? '—' : age(at - oldestAt)}</td></tr></tbody></table></div>`;
}
