/**
 * The console's routing page (/console/routing): the routes and their rules in force with the admin changes applied,
 * forms to suspend or resume a provider or a route's member, set a route's or rule's weights and switch a rule's
 * members (the same changes as POST /admin/routing/controls), the changes in force, their audit, and the messages
 * this instance refused for where they go, by country.
 */
import { createHash } from 'node:crypto';
import { html } from 'hono/html';
import type { FailoverRouteConfig } from '../config/failover-route-config.js';
import type { RuleMatch } from '../config/route-rules-config.js';
import type { RoutingAuditRow, RoutingControlRow } from '../ledger/routing-controls.js';
import { CATCH_ALL, ruleKey } from '../provider-wrappers/route-rules.js';
import { planMembers, type ControlState } from '../provider-wrappers/routing-controls.js';
import type { RoutingSnapshot } from '../provider-wrappers/routing.js';
import type { RouteDeliveryView } from '../provider-wrappers/delivery-choice.js';
import type { MemberView } from '../provider-wrappers/cheapest-delivering.js';
import { formatMicros } from '../kit/money.js';
import { when } from '../outbox/dead-list-frame.js';

/** The actor of a change made on the console: a hash of the session's nonce (never the nonce, which the cookie carries). */
export function consoleActor(nonce: string): string {
  return `console:${createHash('sha256').update(nonce).digest('hex').slice(0, 8)}`;
}

/** The form's fields as the admin API's body: weights written `sinch=3, infobip=1`, members `sinch, infobip`. */
export function controlBodyOfForm(form: FormData): Record<string, unknown> {
  const text = (name: string) => {
    const v = form.get(name);
    return typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 1_000) : undefined;
  };
  const body: Record<string, unknown> = {};
  for (const key of ['action', 'provider', 'route', 'member', 'rule']) {
    const v = text(key);
    if (v !== undefined) body[key] = v;
  }
  const weights = text('weights');
  if (weights !== undefined) {
    body.weights = Object.fromEntries(
      weights.split(',').map((pair) => {
        const [name, weight] = pair.split('=').map((s) => s.trim());
        return [name ?? '', weight === undefined || weight === '' ? Number.NaN : Number(weight)];
      }),
    );
  }
  const members = text('members');
  if (members !== undefined) body.members = members.split(',').map((s) => s.trim());
  return body;
}

const describeMatch = (m: RuleMatch): string => {
  const parts: string[] = [];
  if (m.countries) parts.push(`countries ${m.countries.join(', ')}`);
  if (m.prefixes) parts.push(`prefixes ${m.prefixes.join(', ')}`);
  if (m.brands) parts.push(`brands ${m.brands.join(', ')}`);
  if (m.provider_names) parts.push(`provider_name ${m.provider_names.join(', ')}`);
  if (m.senders) parts.push(`senders ${m.senders.join(', ')}`);
  if (m.number_types) parts.push(`types ${m.number_types.join(', ')}`);
  const hhmm = (n: number) => `${String(Math.floor(n / 60)).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}`;
  if (m.hours) parts.push(`local ${hhmm(m.hours.from)}–${hhmm(m.hours.to)}`);
  if (m.days) parts.push(m.days.join(' '));
  if (m.holidays) parts.push(m.holidays === 'only' ? 'on holidays' : 'not on holidays');
  return parts.length > 0 ? parts.join('; ') : 'anything (catch-all)';
};

function renderRoute(name: string, route: FailoverRouteConfig, controls: ControlState) {
  const rows = [
    ...(route.rules ?? []).map((rule, i) => ({
      decision: { rule: i + 1, name: rule.name },
      match: describeMatch(rule.match),
      validity: rule.validity ?? route.validity,
    })),
  ];
  rows.push({ decision: { rule: 0, name: undefined }, match: 'no rule above matched', validity: route.validity });
  return html`<h3>Route ${name}</h3>
<div class="scroll"><table data-route="${name}"><thead><tr><th>rule</th><th>matches</th><th>members in force</th><th>suspended</th><th>strategy / weights</th><th>validity</th></tr></thead>
<tbody>${rows.map((r) => {
    const plan = planMembers(name, route, r.decision, controls);
    const weights = [...plan.weights].map(([m, w]) => `${m}=${w}`).join(', ');
    return html`<tr data-rule="${ruleKey(r.decision)}"><td>${r.decision.rule === 0 ? CATCH_ALL : `${r.decision.rule}${r.decision.name ? ` (${r.decision.name})` : ''}`}</td><td class="text">${r.match}</td>
<td data-field="members">${plan.members.join(', ') || '—'}</td><td data-field="suspended">${plan.suspended.join(', ') || '—'}</td><td>${plan.strategy}${weights ? ` · ${weights}` : ''}</td><td>${r.validity === undefined ? '—' : `${r.validity} min`}</td></tr>`;
  })}</tbody></table></div>`;
}

const pct = (share: number | null) => (share === null ? '—' : `${(share * 100).toFixed(1)}%`);
const priceText = (m: MemberView) => (m.price ? `${formatMicros(m.price.micros, m.price.currency)} ${m.price.currency}` : 'no rate (ranked last)');
const mins = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);

/**
 * A cheapest_delivering route's panel: per country, each member's price, delivered share, sample and standing now, and
 * the last decision with the figures it used.
 */
function renderDelivery(view: RouteDeliveryView) {
  const s = view.settings;
  return html`<h4>Cheapest member that delivers: route ${view.route}</h4>
<p class="muted">Delivered on time: a delivered receipt within ${mins(s.deadlineMs)} of the send, over the messages of the last ${mins(s.windowMs)}; floor ${pct(s.floor)}, judged from ${s.minSample} messages, back at ${pct(Math.min(1, s.floor + s.recoverMargin))} after ${mins(s.coolDownMs)}. Figures read ${view.figuresAt === null ? 'not yet' : when(view.figuresAt)}.</p>
<div class="scroll"><table data-delivery="${view.route}"><thead><tr><th>country</th><th>member</th><th>price / segment</th><th>delivered on time</th><th>judged (sent)</th><th>state</th><th>why</th></tr></thead>
<tbody>${view.countries.map((c) =>
    c.members
      .map(
        (m, i) =>
          html`<tr data-country="${c.country || 'unknown'}" data-member="${m.member}">${i === 0 ? html`<td rowspan="${c.members.length + 1}">${c.country || 'unknown'}</td>` : ''}<td>${m.member}</td><td>${priceText(m)}</td><td data-field="share">${pct(m.share)}</td><td>${m.judged} (${m.sent})</td><td data-field="state">${m.standing.kind === 'in' ? 'in' : html`stepped down since ${when(m.standing.since)}`}</td><td class="text">${m.why}</td></tr>`,
      )
      .concat(
        html`<tr data-country="${c.country || 'unknown'}" data-field="last-decision"><td colspan="6" class="text">${
          c.last
            ? `last decision ${new Date(c.last.at).toISOString()}, rule ${c.last.rule}: ${c.last.order.join(' → ')} (${c.last.reason.replaceAll('_', ' ')}); used ${c.last.members
                .map(
                  (m) =>
                    `${m.member} ${m.price ? formatMicros(m.price.micros, m.price.currency) : 'no rate'}, ${pct(m.share)} of ${m.judged}${m.standing.kind === 'in' ? '' : ', stepped down'}`,
                )
                .join('; ')}`
            : 'no message decided on this instance yet'
        }</td></tr>`,
      ),
  )}</tbody></table></div>`;
}

export interface RoutingPageView {
  /** The cheapest_delivering routes' figures on this instance (delivery-choice.ts). */
  delivery: RouteDeliveryView[];
  snapshot: RoutingSnapshot;
  controls: ControlState;
  stored: RoutingControlRow[];
  audit: RoutingAuditRow[];
  refusals: Array<{ country: string; code: string; count: number }>;
  csrf: string;
  notice?: { error: boolean; text: string };
}

export function renderRoutingPage(view: RoutingPageView) {
  const { snapshot } = view;
  const plugins = Object.entries(snapshot.providers)
    .filter(([, p]) => p.type !== 'route')
    .map(([n]) => n);
  const form = (fields: ReturnType<typeof html>, button: string) =>
    html`<form method="post" action="/console/routing" class="inline"><input type="hidden" name="csrf" value="${view.csrf}">${fields}<button type="submit">${button}</button></form>`;
  const countries = snapshot.section.countries;
  return html`<section id="routing">
<h2>Routing</h2>
${view.notice ? html`<p class="notice${view.notice.error ? ' error' : ''}" role="${view.notice.error ? 'alert' : 'status'}">${view.notice.text}</p>` : ''}
<p>Countries allowed: <span data-field="countries">${countries ? countries.join(', ') : 'every country (routing.countries is not set)'}</span>${Object.entries(snapshot.section.brands).map(([b, v]) => html`; brand ${b}: ${v.countries.join(', ')}`)}</p>
<h3>Providers</h3>
<div class="scroll"><table data-table="providers"><thead><tr><th>provider</th><th>state</th><th></th></tr></thead><tbody>${plugins.map((p) => {
    const suspended = view.controls.suspended.has(p);
    return html`<tr data-provider="${p}"><td>${p}</td><td data-field="state">${suspended ? 'suspended' : 'in use'}</td><td>${form(
      html`<input type="hidden" name="action" value="${suspended ? 'resume' : 'suspend'}"><input type="hidden" name="provider" value="${p}">`,
      suspended ? 'Resume' : 'Suspend',
    )}</td></tr>`;
  })}</tbody></table></div>
${[...snapshot.routes].map(([name, route]) => {
  const delivery = view.delivery.find((d) => d.route === name);
  return html`${renderRoute(name, route, view.controls)}${delivery ? renderDelivery(delivery) : ''}`;
})}
<h3>Change a route</h3>
${form(
  html`<label>route <input name="route" required size="12"></label> <label>member <input name="member" size="10"></label> <select name="action"><option value="suspend">suspend member</option><option value="resume">resume member</option></select> `,
  'Apply',
)}<br>
${form(
  html`<label>route <input name="route" required size="12"></label> <label>rule (empty: the route's) <input name="rule" size="8"></label> <label>weights <input name="weights" placeholder="sinch=3, infobip=1" size="24"></label> <select name="action"><option value="set_weights">set weights</option><option value="clear_weights">clear weights</option></select> `,
  'Apply',
)}<br>
${form(
  html`<label>route <input name="route" required size="12"></label> <label>rule <input name="rule" required size="8" placeholder="2, a name, ${CATCH_ALL}"></label> <label>members <input name="members" placeholder="sinch, infobip" size="24"></label> <select name="action"><option value="set_members">switch members</option><option value="clear_members">restore configured members</option></select> `,
  'Apply',
)}
<h3>Changes in force</h3>
<div class="scroll"><table data-table="controls"><thead><tr><th>target</th><th>value</th><th>set by</th><th>since</th></tr></thead>
<tbody>${view.stored.map((r) => html`<tr><td>${r.target}</td><td class="text">${r.value}</td><td>${r.set_by}</td><td>${when(r.set_at)}</td></tr>`)}</tbody></table></div>
<h3>Audit (newest first)</h3>
<div class="scroll"><table data-table="audit"><thead><tr><th>when</th><th>who</th><th>target</th><th>from</th><th>to</th></tr></thead>
<tbody>${view.audit.map((a) => html`<tr><td>${when(a.at)}</td><td>${a.actor}</td><td>${a.target}</td><td class="text">${a.from_value ?? '—'}</td><td class="text">${a.to_value ?? '— (cleared)'}</td></tr>`)}</tbody></table></div>
<h3>Refused for where they go (this instance, since it started)</h3>
<div class="scroll"><table data-table="refusals"><thead><tr><th>country</th><th>reason</th><th>messages</th></tr></thead>
<tbody>${view.refusals.map((r) => html`<tr data-country="${r.country}"><td>${r.country}</td><td>${r.code}</td><td>${r.count}</td></tr>`)}</tbody></table></div>
<p class="muted">Stored refusals are messages too: search the dashboard by status <code>rejected</code>.</p>
</section>`;
}
