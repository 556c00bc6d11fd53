/**
 * Posts conversions to the CRM: one JSON array per request to {crm.webhook_url}/sms/conversion with X-API-KEY and an
 * Idempotency-Key that names the conversions it carries (conversionPostKey),
 * on a pool of the receivers' one HTTP client (src/http/outbound.ts). `activity` is spliced in as the stored raw JSON, so the CRM gets back exactly
 * the keys and JSON types it sent.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../config/schema.js';
import { splitUrl, type OutboundClient } from '../http/outbound.js';
import type { ClaimedConversion } from '../ledger/conversions.js';
import { outcomeOfAnswer, type OutboxOutcome } from '../outbox/outcome.js';

/**
 * Whether a refused post may be about some of its rows rather than about the request: a 4xx other than the
 * credentials (401, 403, 407), a timeout or rate answer (408, 429) and too early (425).
 */
export function isRowRefusal(status: number | null): boolean {
  return status !== null && status >= 400 && status < 500 && ![401, 403, 407, 408, 425, 429].includes(status);
}

export function conversionBody(rows: ClaimedConversion[]): string {
  return `[${rows
    .map((r) => `{"activity":${r.activity_json},"sms_id":${JSON.stringify(r.sms_id)},"delivery_status":${JSON.stringify(r.delivery_status)}}`)
    .join(',')}]`;
}

/**
 * The post's Idempotency-Key: a digest of the conversions it carries (outbox id, sms_id, status), so a retry of the
 * same conversions carries the same key, whichever process sends it, and a post of other conversions another key.
 * A retry after a crash takes the same rows again (the outbox is claimed in next_attempt_at, id order), so a CRM that
 * keeps the keys it has seen can drop the repeat (docs/crash-windows.md).
 */
export function conversionPostKey(rows: ReadonlyArray<Pick<ClaimedConversion, 'id' | 'sms_id' | 'delivery_status'>>): string {
  const hash = createHash('sha256');
  for (const r of rows) hash.update(`${r.id}:${r.sms_id}:${r.delivery_status}\n`);
  return `conv-${hash.digest('base64url').slice(0, 32)}`;
}

export function createWebhookClient(crm: Config['crm'], http: OutboundClient) {
  const url = crm.webhook_url ? `${crm.webhook_url.replace(/\/+$/, '')}/sms/conversion` : undefined;
  const target = url === undefined ? undefined : splitUrl(url);
  const pool = http.pool({ connections: 8, timeout: crm.timeout, timeoutMessage: `no answer within crm.timeout (${crm.timeout} ms)` });
  return {
    url,
    async post(rows: ClaimedConversion[]): Promise<OutboxOutcome> {
      if (!target) return { ok: false, status: null, error: 'crm.webhook_url is not configured' };
      const answer = await pool.send({
        ...target,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': crm.webhook_api_key, 'idempotency-key': conversionPostKey(rows) },
        body: conversionBody(rows),
      });
      return outcomeOfAnswer(answer, WORDS);
    },
  };
}

const WORDS = {
  answered: (status: number, body: string) => `webhook answered ${status}: ${body.slice(0, 200)}`,
  unanswered: (e: Error & { code?: string }) => `webhook unreachable: ${e.code ?? e.name}: ${e.message}`,
};

export type WebhookClient = ReturnType<typeof createWebhookClient>;
