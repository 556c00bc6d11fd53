/**
 * The console's costs page (the report of /admin/costs: spend by day, provider, country, brand, CRM activity and
 * action group, delivered share, cost per delivered message, with its CSV) and its preview page (POST
 * /admin/sms/preview's answer for a CRM manager writing a template). docs/costs.md. Escaped by hono/html.
 */
import { html } from 'hono/html';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { buildCostReport, costReportCsv, readCostQuery, type CostAnswerRow } from '../costs/report.js';
import { htmlPage } from '../http/html-page.js';
import { route, type MountableRoute } from '../http/route-table.js';
import type { CostDimension } from '../ledger/costs.js';
import type { Database } from '../ledger/schema.js';
import { previewText, type PreviewAnswer, type PreviewDeps } from '../sms/preview.js';
import { TITLE, type ConsoleDoor } from './door.js';
import { disabled, page, searchField } from '../outbox/page-docs.js';

const GROUPS: ReadonlyArray<[query: string, column: CostDimension, label: string]> = [
  ['day', 'day', 'day'],
  ['provider', 'provider', 'provider'],
  ['country', 'country', 'country'],
  ['brand', 'brand_id', 'brand'],
  ['activity', 'activity_id', 'CRM activity'],
  ['action_group', 'action_group_id', 'action group'],
];

function renderCostForm(params: URLSearchParams, groupBy: readonly CostDimension[], error: string | undefined) {
  const csv = new URLSearchParams(params);
  csv.set('format', 'csv');
  return html`<form method="get" action="/console/costs" class="search">
<label>From (UTC day)<input type="date" name="from" value="${params.get('from') ?? ''}"></label>
<label>To (UTC day)<input type="date" name="to" value="${params.get('to') ?? ''}"></label>
<label>Group by<input type="search" name="group_by" value="${GROUPS.filter(([, c]) => groupBy.includes(c))
    .map(([q]) => q)
    .join(',')}" placeholder="day,provider"></label>
<p class="muted">Add or remove: ${GROUPS.map(([q, , label]) => html`<a href="/console/costs?${withGroup(params, q)}">${label}</a> `)}· <a href="/console/costs">day and provider</a></p>
<p><button type="submit">Show</button> <a href="/console/costs?${csv.toString()}" download>CSV</a></p>
</form>
${error ? html`<p class="notice error" role="alert">${error}</p>` : ''}`;
}

/** The same query grouped by one more dimension (or one fewer, when it is already in). */
function withGroup(params: URLSearchParams, group: string): string {
  const next = new URLSearchParams(params);
  const current = (params.get('group_by') ?? 'day,provider').split(',').filter((g) => g !== '');
  next.set('group_by', (current.includes(group) ? current.filter((g) => g !== group) : [...current, group]).join(','));
  next.delete('format');
  return next.toString();
}

function renderCostTable(groupBy: readonly CostDimension[], rows: readonly CostAnswerRow[], truncated: boolean) {
  if (rows.length === 0) return html`<p class="notice" role="status">No message was counted in these days.</p>`;
  const groups = GROUPS.filter(([, c]) => groupBy.includes(c));
  const cell = (row: CostAnswerRow, column: CostDimension) => {
    const value = (row as unknown as Record<string, string | undefined>)[column];
    return value === '' ? '—' : value;
  };
  return html`<div class="scroll"><table data-table="costs">
<thead><tr>${groups.map(([, , label]) => html`<th>${label}</th>`)}<th>currency</th><th>messages</th><th>segments</th><th>delivered</th><th title="delivered ÷ messages">delivered share</th><th title="reported prices where known, estimates otherwise">spend</th><th>of it reported</th><th>cost per delivered</th></tr></thead>
<tbody>${rows.map(
    (
      r,
    ) => html`<tr>${groups.map(([, c]) => html`<td>${cell(r, c)}</td>`)}<td>${r.currency || '—'}</td><td>${r.messages}</td><td>${r.segments}</td><td>${r.delivered}</td>
<td>${r.delivered_share === null ? '—' : `${(r.delivered_share * 100).toFixed(1)} %`}</td><td data-field="spend">${r.spend}</td><td>${r.reported_spend}</td><td>${r.cost_per_delivered ?? '—'}</td></tr>`,
  )}</tbody></table></div>
${truncated ? html`<p class="notice">Only the first rows are shown: narrow the days or the grouping.</p>` : ''}`;
}

function renderPreviewForm(params: URLSearchParams, error: string | undefined) {
  return html`<form method="get" action="/console/preview" class="search">
<label>Text<textarea name="text" rows="5" cols="60" maxlength="10000">${params.get('text') ?? ''}</textarea></label>
<label>Recipient (or)<input type="search" name="recipient" value="${params.get('recipient') ?? ''}" inputmode="tel"></label>
<label>Country<input type="search" name="country" value="${params.get('country') ?? ''}" placeholder="GB" maxlength="2"></label>
<p><button type="submit">Preview</button></p>
</form>
${error ? html`<p class="notice error" role="alert">${error}</p>` : ''}`;
}

function renderPreview(p: PreviewAnswer) {
  return html`<dl data-preview>
<dt>Encoding</dt><dd data-field="encoding">${p.encoding === 'gsm7' ? 'GSM-7' : 'UCS-2'}</dd>
<dt>Segments</dt><dd data-field="segments">${p.segments}${p.over_max_segments ? html` <strong>(more than sms.max_segments: the send would be refused)</strong>` : ''}</dd>
<dt>Characters</dt><dd>${p.characters}, ${p.characters_left} left in the last segment (${p.characters_per_segment} a segment)</dd>
<dt>Country</dt><dd>${p.country ?? '—'}</dd>
</dl>
${
  p.ucs2_characters.length > 0
    ? html`<h3>Characters that force UCS-2</h3><table data-table="ucs2"><thead><tr><th>character</th><th>code point</th><th>GSM-7 look-alike</th></tr></thead>
<tbody>${p.ucs2_characters.map((c) => html`<tr><td>${c.character}</td><td>${c.code_point}</td><td>${c.gsm7_look_alike === null ? '—' : html`<code>${c.gsm7_look_alike}</code>`}</td></tr>`)}</tbody></table>
<p class="muted">${p.smart_encoding ? 'sms.smart_encoding is on: the look-alikes are put in before sending.' : 'Replace them (or turn sms.smart_encoding on for the look-alikes) to send as GSM-7.'}</p>`
    : ''
}
<h3>Cost by provider</h3><table data-table="prices"><thead><tr><th>provider</th><th>per segment</th><th>this text</th></tr></thead>
<tbody>${p.prices.map((x) => html`<tr><td>${x.provider}</td><td>${x.per_segment === null ? 'no rate' : `${x.per_segment} ${x.currency}`}</td><td data-field="total">${x.total === null ? '—' : `${x.total} ${x.currency}`}</td></tr>`)}</tbody></table>`;
}

export function costConsoleRoutes(deps: { door: ConsoleDoor; readDb: Kysely<Database>; now: () => number; preview: PreviewDeps }): MountableRoute[] {
  const { door } = deps;
  return [
    route({
      method: 'get',
      path: '/costs',
      doc: {
        tag: 'console',
        summary: 'Spend by day, provider, country, brand, CRM activity and action group, with delivered share and cost per delivered message',
        description: 'The parameters of GET /admin/costs; format=csv answers the CSV.',
        security: ['consoleSession'],
        parameters: [
          searchField('from', 'First UTC day'),
          searchField('to', 'Last UTC day'),
          searchField('group_by', 'day, provider, country, brand, activity, action_group'),
          searchField('format', 'csv for the CSV'),
        ],
        responses: {
          200: page('The costs page, or its CSV'),
          400: page('A parameter is not valid (named on the page)'),
          401: page('No valid session'),
          403: disabled,
        },
      },
      handlers: [
        async (c) => {
          const session = await door.sessionOf(c);
          if (!session) return door.loginPage(c, 401, 'Sign in to see the costs.');
          const params = new URL(c.req.url).searchParams;
          const read = readCostQuery(params, deps.now(), undefined, { form: true });
          if (!read.ok)
            return htmlPage(c, { title: TITLE, nav: door.nav(session), status: 400, body: html`<h2>Costs</h2>${renderCostForm(params, [], read.error)}` });
          const report = await buildCostReport(deps.readDb, read.query);
          if (read.query.format === 'csv') return c.body(costReportCsv(read.query.groupBy, report.rows), 200, { 'content-type': 'text/csv; charset=utf-8' });
          return htmlPage(c, {
            title: TITLE,
            nav: door.nav(session),
            body: html`<h2>Costs</h2>${renderCostForm(params, read.query.groupBy, undefined)}${renderCostTable(read.query.groupBy, report.rows, report.truncated)}`,
          });
        },
      ],
    }),
    route({
      method: 'get',
      path: '/preview',
      doc: {
        tag: 'console',
        summary: "A text's encoding, segments, characters left, characters that force UCS-2, and its cost per provider",
        security: ['consoleSession'],
        parameters: [searchField('text', 'The text'), searchField('recipient', 'A phone number'), searchField('country', 'ISO 3166 alpha-2')],
        responses: { 200: page('The preview page'), 400: page('A field is not valid (named on the page)'), 401: page('No valid session'), 403: disabled },
      },
      handlers: [
        async (c) => {
          const session = await door.sessionOf(c);
          if (!session) return door.loginPage(c, 401, 'Sign in to preview a text.');
          const params = new URL(c.req.url).searchParams;
          const nav = door.nav(session);
          const text = params.get('text') ?? '';
          if (text === '') return htmlPage(c, { title: TITLE, nav, body: html`<h2>Preview a text</h2>${renderPreviewForm(params, undefined)}` });
          const input = previewFormSchema.safeParse({
            text,
            ...(params.get('recipient') ? { recipient: params.get('recipient') } : {}),
            ...(params.get('country') ? { country: params.get('country')!.toUpperCase() } : {}),
          });
          const preview = input.success
            ? previewText(input.data, deps.preview)
            : { ok: false as const, error: `${String(input.error.issues[0]?.path[0])}: not valid` };
          if (!preview.ok)
            return htmlPage(c, { title: TITLE, nav, status: 400, body: html`<h2>Preview a text</h2>${renderPreviewForm(params, preview.error)}` });
          return htmlPage(c, { title: TITLE, nav, body: html`<h2>Preview a text</h2>${renderPreviewForm(params, undefined)}${renderPreview(preview.answer)}` });
        },
      ],
    }),
  ];
}

const previewFormSchema = z.object({
  text: z.string().max(10_000),
  recipient: z.string().max(64).optional(),
  country: z
    .string()
    .regex(/^[A-Z]{2}$/)
    .optional(),
});
