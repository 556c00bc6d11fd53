/** One message on the console: its fields, a timeline of everything that happened to it, and the raw rows. */
import { html } from 'hono/html';
import type { messageStory } from '../delivery/message-story.js';
import { indentJson } from '../http/exact-json.js';
import { maskPhoneNumbersIn } from '../observability/logger.js';
import { when } from '../outbox/dead-list-frame.js';
import { routeText, shownRecipient, statusWord } from './search-page.js';

export type MessageStory = Awaited<ReturnType<typeof messageStory>>;

/** Milliseconds matter here: a send, its receipt and its conversion are often within one second. */
const instant = (ms: number | null) => (ms === null ? '—' : new Date(ms).toISOString().replace('T', ' ').slice(0, 23));
const detailText = (detail: Record<string, string | number | null>) =>
  Object.entries(detail)
    .filter(([, v]) => v !== null && v !== '')
    .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${k.endsWith('_at') && typeof v === 'number' ? instant(v) : v}`)
    .join(' · ');

export function renderStory(story: MessageStory, searchedRecipient: string | undefined) {
  const m = story.message;
  const fields: Array<[string, unknown]> = [
    ['sms_id', m.sms_id],
    ['activity.id', m.activity_key],
    ['user_id', m.user_id],
    ['request id', m.request_id],
    ['status', statusWord(m)],
    ...(m.held_until === null ? [] : [['held until', `${instant(m.held_until)} UTC${m.state === 'held' ? '' : ' (released)'}`] as [string, unknown]]),
    ['provider', m.provider],
    ['route', routeText(m)],
    ['provider message id', m.provider_message_id],
    ['recipient', shownRecipient(m.recipient, searchedRecipient)],
    ['sender', m.sender],
    ['encoding', m.encoding],
    ['segments', m.segments],
    ['send state', m.state],
    ['send attempts', m.attempts],
    ['error', m.error === null ? null : maskPhoneNumbersIn(m.error)],
    ['provider status', m.provider_status],
    ['delivery status', m.delivery_status],
    ['delivery source', m.delivery_source],
    ['country', m.country],
    ['cost', m.cost === null ? (m.cost_source === 'none' ? 'no rate, no price' : null) : `${m.cost} ${m.cost_currency} (${m.cost_source})`],
  ];
  return html`<section id="story">
<h2>Message ${m.sms_id}</h2>
<div class="scroll"><table class="fields"><tbody>${fields.map(([k, v]) => html`<tr><th scope="row">${k}</th><td data-field="${k}">${v ?? '—'}</td></tr>`)}</tbody></table></div>
<h3>Timeline (UTC)</h3>
<ol class="timeline" data-list="timeline">${story.timeline.map(
    (e) => html`<li data-kind="${e.kind}"><time>${instant(e.at)}</time> <span class="kind kind-${e.kind}">${e.kind}</span> ${e.summary}
${detailText(e.detail) ? html`<br><span class="muted">${detailText(e.detail)}</span>` : ''}</li>`,
  )}</ol>
<h3>Activity as received</h3><pre>${indentJson(m.activity.text)}</pre>
<h3>Receipts (${story.receipts.length})</h3>
<div class="scroll"><table data-table="receipts"><thead><tr><th>received</th><th>provider status</th><th>mapped</th><th>error code</th><th>provider message id</th></tr></thead>
<tbody>${story.receipts.map((r) => html`<tr><td>${when(r.received_at)}</td><td>${r.provider_status}</td><td>${r.mapped_status}</td><td>${r.error_code ?? '—'}</td><td>${r.provider_message_id ?? '—'}</td></tr>`)}</tbody></table></div>
<h3>Conversions (${story.conversions.length})</h3>
<div class="scroll"><table data-table="conversions"><thead><tr><th>id</th><th>status</th><th>attempts</th><th>posted</th><th>dead</th><th>last error</th></tr></thead>
<tbody>${story.conversions.map(
    (
      c,
    ) => html`<tr><td>${c.id}</td><td>${c.delivery_status}</td><td>${c.attempts}</td><td>${when(c.posted_at)}</td><td>${c.dead ? 'yes' : 'no'}</td><td class="text">${c.last_error ?? '—'}</td></tr>
${c.attempt_log.map((a) => html`<tr class="muted sub"><td></td><td colspan="5" class="text">attempt at ${when(a.attempted_at)}: ${a.ok ? 'accepted' : 'failed'}, ${a.http_status === null ? 'no HTTP answer' : `HTTP ${a.http_status}`}${a.error ? ` — ${a.error}` : ''}</td></tr>`)}`,
  )}</tbody></table></div>
</section>`;
}
