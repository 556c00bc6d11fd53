/** The console's HTML: the login form and the dashboard (totals, charts, outbox, search). Escaped by hono/html. */
import { html } from 'hono/html';
import type { OutcomeCounts } from '../ledger/delivery-stats.js';
import { renderOutcomeChart } from './chart.js';
import type { MemberHealthView } from '../provider-wrappers/breakers.js';
import type { OutboxPanel } from '../outbox/panel.js';
import { renderLatency, renderRateChart, renderRefusals } from './panels.js';
import { when } from '../outbox/dead-list-frame.js';
import { renderResults, renderSearchForm, type SearchView } from './search-page.js';
import { deliveryRate, type ConsoleSummary, type WindowTotals } from './summary.js';

const COLUMNS: ReadonlyArray<{ outcome: keyof OutcomeCounts; label: string; hint: string }> = [
  { outcome: 'submitted', label: 'sent', hint: 'accepted by the provider' },
  { outcome: 'delivered', label: 'delivered', hint: 'terminal receipt: delivered' },
  { outcome: 'undelivered', label: 'undelivered', hint: 'terminal receipt: undelivered' },
  { outcome: 'failed', label: 'failed', hint: 'terminal receipt: failed' },
  { outcome: 'delivery_unknown', label: 'unknown', hint: 'no terminal receipt in time, or the provider did not know' },
  { outcome: 'rejected', label: 'rejected', hint: 'refused by the provider at send (permanent)' },
  { outcome: 'retryable', label: 'send errors', hint: 'transient provider errors (the CRM retries)' },
];

/** Rounded down, so a rate shows 100.0 % only when every message was delivered. */
export const percent = (rate: number | null) => (rate === null ? '—' : `${(Math.floor(rate * 1000) / 10).toFixed(1)} %`);

const SUPPRESSION_LABELS: ReadonlyMap<string, string> = new Map([
  ['blocked', 'blocked'],
  ['excluded', 'excluded'],
  ['opted_out', 'opted out of sms'],
  ['no_consent', 'no sms consent'],
]);

export function renderLoginForm(error?: string) {
  return html`${error ? html`<p class="notice error" role="alert">${error}</p>` : ''}
<form method="post" action="/console/login">
  <p><label>Admin key<br><input type="password" name="key" autocomplete="current-password" required autofocus></label></p>
  <p><button type="submit">Sign in</button></p>
</form>
<p class="muted">The key is <code>admin.api_key</code> from config.yaml. The console keeps a signed session cookie, never the key.</p>`;
}

export function renderNav(csrf: string) {
  return html`<nav><a href="/console">Console</a> · <a href="/console/dead-letters">Dead letters</a> · <a href="/console/dead-events">Dead events</a> · <a href="/console/dead-credits">Dead credits</a> · <a href="/console/costs">Costs</a> · <a href="/console/preview">Preview</a> · <a href="/console/routing">Routing</a> · <a href="/docs">API docs</a> ·
<form class="inline" method="post" action="/console/logout"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Sign out</button></form></nav>`;
}

function renderWindow(w: WindowTotals) {
  const key = w.minutes === 60 ? 'hour' : 'day';
  return html`<h3>${w.label}</h3>
<div class="scroll"><table data-window="${key}">
<thead><tr><th>provider</th>${COLUMNS.map((c) => html`<th title="${c.hint}">${c.label}</th>`)}<th title="delivered ÷ messages with a known outcome">delivery rate</th><th>sent / min</th></tr></thead>
<tbody>${w.rows.map(
    (r) => html`<tr data-provider="${r.provider}"><td>${r.provider === 'all' ? html`<strong>all</strong>` : r.provider}</td>
${COLUMNS.map((c) => html`<td data-outcome="${c.outcome}">${r.counts[c.outcome]}</td>`)}
<td data-outcome="rate">${percent(deliveryRate(r.counts))}</td><td>${(r.counts.submitted / w.minutes).toFixed(2)}</td></tr>`,
  )}</tbody></table></div>`;
}

export interface DashboardView {
  summary: ConsoleSummary;
  search: SearchView;
  replayed?: number;
  /** Circuit breakers of route members (src/provider-wrappers/breakers.ts); the section is left out when there are none. */
  circuits?: MemberHealthView[];
  /** Each outbox kind's panel shown with this configuration, in the registry's order, with what it read. */
  outboxes: Array<{ panel: OutboxPanel; data: unknown }>;
}

function renderCircuits(circuits: MemberHealthView[]) {
  return html`<section id="circuits">
<h2>Route members</h2>
<div class="scroll"><table data-table="circuits"><thead><tr><th>route</th><th>member</th><th>circuit</th><th>since</th><th title="delivered ÷ final receipts in the breaker's window">delivery rate</th><th>reason</th></tr></thead>
<tbody>${circuits.map((c) => html`<tr data-member="${c.route}/${c.member}"><td>${c.route}</td><td>${c.member}</td><td data-circuit="${c.state}">${c.state.replace('_', '-')}</td><td>${c.since === undefined ? '—' : when(c.since)}</td><td>${percent(c.deliveryRate)}</td><td style="text-align:left">${c.reason ?? ''}</td></tr>`)}</tbody></table></div>
</section>`;
}

export function renderDashboard(view: DashboardView) {
  const { summary } = view;
  return html`${view.replayed !== undefined ? html`<p class="notice" role="status">Replayed ${view.replayed} dead conversion(s); the conversion outbox posts them now.</p>` : ''}
<section id="search">
<h2>Find messages</h2>
${renderSearchForm(view.search)}
${renderResults(view.search)}
</section>
<section id="totals">
<h2>Traffic and delivery</h2>
<p class="muted">As of ${when(summary.at)} UTC. <a href="/console">Refresh</a></p>
${summary.windows.map(renderWindow)}
</section>
${view.circuits?.length ? renderCircuits(view.circuits) : ''}
${view.outboxes.map(
  ({ panel, data }) => html`<section id="${panel.section}">
<h2>${panel.heading}</h2>
${panel.render(data, summary.at)}
<p><a href="${panel.deadList.href}">${panel.deadList.text}</a></p>
</section>
`,
)}<section id="suppressed">
<h2>Not sent to the player (last 24 hours)</h2>
<p class="muted">Refused before any provider call because of the player's data (sms.suppression).</p>
<div class="scroll"><table data-table="suppressed"><thead><tr>${summary.suppressed.map((s) => html`<th>${SUPPRESSION_LABELS.get(s.reason)}</th>`)}</tr></thead>
<tbody><tr>${summary.suppressed.map((s) => html`<td data-suppressed="${s.reason}">${s.count}</td>`)}</tr></tbody></table></div>
</section>
<section id="charts"><h2>Delivery</h2>
${renderRateChart(summary.rates)}
${renderLatency(summary.latency)}
${renderRefusals(summary.refusals)}
<h3>Outcomes over time</h3>
${summary.charts.map(renderOutcomeChart)}</section>`;
}
