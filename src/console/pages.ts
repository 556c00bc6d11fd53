/** The console's HTML: the login form and the dashboard (totals, charts, outbox, search). Escaped by hono/html. */
import { html } from 'hono/html';
import type { OutcomeCounts } from '../ledger/delivery-stats.js';
import type { messageStory } from '../delivery/admin-routes.js';
import { indentJson } from '../http/exact-json.js';
import { renderOutcomeChart } from './chart.js';
import { deliveryRate, type ConsoleSummary, type WindowTotals } from './summary.js';

export type MessageStory = Awaited<ReturnType<typeof messageStory>>;

/** receipts.matched, for people (ledger/schema.ts). */
const RECEIPT_MATCH: Readonly<Record<number, string>> = { 0: 'parked', 1: 'yes', 2: 'set aside' };

const COLUMNS: ReadonlyArray<{ outcome: keyof OutcomeCounts; label: string; hint: string }> = [
  { outcome: 'submitted', label: 'sent', hint: 'accepted by the provider' },
  { outcome: 'delivered', label: 'delivered', hint: 'terminal receipt: delivered' },
  { outcome: 'undelivered', label: 'undelivered', hint: 'terminal receipt: undelivered' },
  { outcome: 'failed', label: 'failed', hint: 'terminal receipt: failed' },
  { outcome: 'delivery_unknown', label: 'unknown', hint: 'no terminal receipt in time, or the provider did not know' },
  { outcome: 'rejected', label: 'rejected', hint: 'refused by the provider at send (permanent)' },
  { outcome: 'retryable', label: 'send errors', hint: 'transient provider errors (the CRM retries)' },
];

const SUPPRESSION_LABELS: ReadonlyMap<string, string> = new Map([
  ['blocked', 'blocked'],
  ['excluded', 'excluded'],
  ['opted_out', 'opted out of sms'],
  ['no_consent', 'no sms consent'],
]);

const when = (ms: number | null) => (ms === null ? '—' : new Date(Number(ms)).toISOString().replace('T', ' ').slice(0, 19));
const percent = (rate: number | null) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`);

export function renderLoginForm(error?: string) {
  return html`${error ? html`<p class="notice error" role="alert">${error}</p>` : ''}
<form method="post" action="/console/login">
  <p><label>Admin key<br><input type="password" name="key" autocomplete="current-password" required autofocus></label></p>
  <p><button type="submit">Sign in</button></p>
</form>
<p class="muted">The key is <code>admin.api_key</code> from config.yaml. The console keeps a signed session cookie, never the key.</p>`;
}

export function renderNav(csrf: string) {
  return html`<nav><a href="/console">Console</a> · <a href="/docs">API docs</a> ·
<form class="inline" method="post" action="/console/logout"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Sign out</button></form></nav>`;
}

function renderWindow(w: WindowTotals) {
  const key = w.minutes === 60 ? 'hour' : 'day';
  return html`<h3>${w.label}</h3>
<table data-window="${key}">
<thead><tr><th>provider</th>${COLUMNS.map((c) => html`<th title="${c.hint}">${c.label}</th>`)}<th title="delivered ÷ messages with a known outcome">delivery rate</th><th>sent / min</th></tr></thead>
<tbody>${w.rows.map(
    (r) => html`<tr data-provider="${r.provider}"><td>${r.provider === 'all' ? html`<strong>all</strong>` : r.provider}</td>
${COLUMNS.map((c) => html`<td data-outcome="${c.outcome}">${r.counts[c.outcome]}</td>`)}
<td data-outcome="rate">${percent(deliveryRate(r.counts))}</td><td>${(r.counts.submitted / w.minutes).toFixed(2)}</td></tr>`,
  )}</tbody></table>`;
}

function renderStory(story: MessageStory) {
  const m = story.message;
  const fields: Array<[string, unknown]> = [
    ['sms_id', m.sms_id], ['activity.id', m.activity_key], ['provider', m.provider], ['provider message id', m.provider_message_id],
    ['recipient', m.recipient], ['sender', m.sender], ['encoding', m.encoding], ['segments', m.segments], ['send state', m.state],
    ['error', m.error], ['provider status', m.provider_status], ['delivery status', m.delivery_status], ['delivery source', m.delivery_source],
    ['created', when(m.created_at)], ['submitted', when(m.submitted_at)], ['completed', when(m.completed_at)],
  ];
  return html`<section id="story">
<h3>Message</h3>
<table><tbody>${fields.map(([k, v]) => html`<tr><th>${k}</th><td style="text-align:left" data-field="${k}">${v ?? '—'}</td></tr>`)}</tbody></table>
<h3>Activity</h3><pre>${indentJson(m.activity.text)}</pre>
<h3>Receipts (${story.receipts.length})</h3>
<table data-table="receipts"><thead><tr><th>received</th><th>provider status</th><th>mapped</th><th>error code</th><th>matched</th></tr></thead>
<tbody>${story.receipts.map((r) => html`<tr><td>${when(r.received_at)}</td><td>${r.provider_status}</td><td>${r.mapped_status}</td><td>${r.error_code ?? '—'}</td><td>${RECEIPT_MATCH[r.matched] ?? r.matched}</td></tr>`)}</tbody></table>
<h3>Conversions (${story.conversions.length})</h3>
<table data-table="conversions"><thead><tr><th>id</th><th>status</th><th>attempts</th><th>posted</th><th>dead</th><th>last error</th></tr></thead>
<tbody>${story.conversions.map((c) => html`<tr><td>${c.id}</td><td>${c.delivery_status}</td><td>${c.attempts}</td><td>${when(c.posted_at)}</td><td>${c.dead ? 'yes' : 'no'}</td><td style="text-align:left">${c.last_error ?? '—'}</td></tr>
${c.attempt_log.map((a) => html`<tr class="muted"><td></td><td colspan="2">attempt at ${when(a.attempted_at)}</td><td>${a.ok ? 'ok' : 'failed'}</td><td>${a.http_status ?? '—'}</td><td style="text-align:left">${a.error ?? ''}</td></tr>`)}`)}</tbody></table>
</section>`;
}

export interface DashboardView {
  summary: ConsoleSummary;
  csrf: string;
  query?: string;
  story?: MessageStory | null;
  replayed?: number;
}

export function renderDashboard(view: DashboardView) {
  const { summary, csrf } = view;
  return html`${view.replayed !== undefined ? html`<p class="notice" role="status">Replayed ${view.replayed} dead conversion(s); the worker posts them now.</p>` : ''}
<section id="search">
<h2>Find a message</h2>
<form method="get" action="/console"><input type="search" name="q" value="${view.query ?? ''}" placeholder="activity.id or sms_id" required> <button type="submit">Search</button></form>
${view.query !== undefined && view.story === null ? html`<p class="notice error" role="alert">No message with activity.id or sms_id ${view.query}.</p>` : ''}
${view.story ? renderStory(view.story) : ''}
</section>
<section id="totals">
<h2>Traffic and delivery</h2>
<p class="muted">As of ${when(summary.at)} UTC. <a href="/console">Refresh</a></p>
${summary.windows.map(renderWindow)}
</section>
<section id="suppressed">
<h2>Not sent to the player (last 24 hours)</h2>
<p class="muted">Refused before any provider call because of the player's data (sms.suppression).</p>
<table><thead><tr>${summary.suppressed.map((s) => html`<th>${SUPPRESSION_LABELS.get(s.reason)}</th>`)}</tr></thead>
<tbody><tr>${summary.suppressed.map((s) => html`<td data-suppressed="${s.reason}">${s.count}</td>`)}</tr></tbody></table>
</section>
<section id="charts"><h2>Delivery outcomes over time</h2>${summary.charts.map(renderOutcomeChart)}</section>
<section id="outbox">
<h2>Conversion outbox</h2>
<table><thead><tr><th>due</th><th>retrying</th><th>dead</th><th>parked receipts</th></tr></thead>
<tbody><tr><td data-backlog="due">${summary.backlog.due}</td><td data-backlog="retrying">${summary.backlog.retrying}</td><td data-backlog="dead">${summary.backlog.dead}</td><td data-backlog="parked">${summary.parked}</td></tr></tbody></table>
<form method="post" action="/console/replay"><input type="hidden" name="csrf" value="${csrf}">
<button type="submit"${summary.backlog.dead === 0 ? ' disabled' : ''}>Replay dead conversions</button></form>
<p id="crm-events">CRM events not yet sent: <span data-events="unsent">${summary.events.unsent}</span> (retrying <span data-events="retrying">${summary.events.retrying}</span>, dead <span data-events="dead">${summary.events.dead}</span>)${summary.events.oldestUnsentAt === null ? '' : `, oldest accepted ${when(summary.events.oldestUnsentAt)} UTC`}. Details and replay: <code>GET /admin/events</code>.</p>
</section>`;
}
