/**
 * Infobip and Sinch receipts are believed on the strength of the token in their URL (providers/kit/callback-token.ts),
 * so their bodies are the attacker's to shape once a URL leaks. Over arbitrary JSON bodies, and over real report
 * shapes with one field replaced by arbitrary JSON, parseReceipt never throws, and whatever it accepts speaks only
 * about the sms_id the token was issued for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callbackToken } from '../../providers/kit/callback-token.js';
import type { IncomingReceipt, SmsProvider } from '../../providers/types.js';
import { createPlugin } from '../helpers/providers.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);
const SMS_ID = '0190c0de-0000-7000-8000-000000000042';
const SECRET = 'property-webhook-secret-0123';

const providers: Record<string, { provider: SmsProvider; report: Record<string, unknown> }> = {
  infobip: {
    provider: createPlugin('infobip', { api_key: 'k', webhook_secret: SECRET }),
    report: {
      results: [
        { messageId: 'm-1', callbackData: SMS_ID, status: { groupName: 'DELIVERED', name: 'DELIVERED_TO_HANDSET' }, error: { id: 0, name: 'NO_ERROR' } },
      ],
    },
  },
  sinch: {
    provider: createPlugin('sinch', { service_plan_id: 'plan1', api_token: 't', webhook_secret: SECRET }),
    report: { type: 'recipient_delivery_report_sms', batch_id: 'B1', recipient: '+447700900123', code: 0, status: 'Delivered', client_reference: SMS_ID },
  },
};

const receiptFor = (type: string, body: string): IncomingReceipt => ({
  method: 'POST',
  publicUrl: `http://gw.example/dlr/${type}?sms_id=${SMS_ID}&token=${callbackToken(SECRET, type, SMS_ID)}`,
  query: { sms_id: SMS_ID, token: callbackToken(SECRET, type, SMS_ID) },
  headers: { 'content-type': 'application/json' },
  contentType: 'application/json',
  rawBody: Buffer.from(body),
});

describe.each(Object.keys(providers))('%s receipts with a valid token', (type) => {
  const { provider, report } = providers[type]!;

  const check = async (body: string) => {
    const parsed = await provider.parseReceipt(receiptFor(type, body));
    if (parsed.ok) for (const event of parsed.events) expect(event.smsId).toBe(SMS_ID);
    else expect(parsed.reason).toMatch(/\S/);
  };

  it('the genuine report is accepted', async () => {
    expect(await provider.parseReceipt(receiptFor(type, JSON.stringify(report)))).toMatchObject({ ok: true, events: [{ smsId: SMS_ID, status: 'delivered' }] });
  });

  it('arbitrary JSON bodies never throw and never speak about another message', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), (value) => check(JSON.stringify(value))),
      { numRuns: RUNS },
    );
  });

  it('the real shape with one field replaced by arbitrary JSON never throws', async () => {
    const inner = type === 'infobip' ? (report.results as Array<Record<string, unknown>>)[0]! : report;
    const keys = [...Object.keys(inner), '__proto__', 'constructor'];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...keys), fc.jsonValue(), (key, value) => {
        const changed = JSON.parse(JSON.stringify(inner)) as Record<string, unknown>;
        Object.defineProperty(changed, key, { value, enumerable: true, configurable: true, writable: true });
        const body = type === 'infobip' ? { results: [changed] } : changed;
        return check(JSON.stringify(body));
      }),
      { numRuns: RUNS },
    );
  });
});
