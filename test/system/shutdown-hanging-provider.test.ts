/**
 * SIGTERM while a provider never answers (docs/security.md): the real `serve` process abandons the provider call
 * before server.shutdown_timeout, leaves that message `uncertain`, answers the CRM's batch with 200 (the hung
 * entry `fatal`, the sent one `successful`) before its connections close, and exits 0.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwilioFake, type TwilioFake } from '../fakes/twilio.js';
import { startServe, writeConfig } from '../helpers/child.js';
import { smsMessage, testConfigDocument, TEST_API_KEY, waitFor } from '../helpers/gateway.js';

let twilio: TwilioFake;
let dir: string;
beforeAll(async () => {
  twilio = await startTwilioFake();
  dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-sigterm-'));
});
afterAll(async () => {
  await twilio.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('SIGTERM with a provider that never answers', () => {
  it('answers the batch (hung entry fatal, message uncertain) before server.shutdown_timeout and exits 0', async () => {
    const document = testConfigDocument(dir, {
      server: { shutdown_timeout: '3s' },
      sms: { send_timeout: '60s', batch_deadline: '60s' },
      providers: {
        twilio: { type: 'twilio', account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006', base_url: twilio.url },
      },
    });
    const serve = await startServe(writeConfig(dir, { ...document, log: { level: 'info' } }));
    const batch = fetch(`${serve.url}/channels/sms/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      body: JSON.stringify([
        smsMessage('hangs', { provider_name: 'twilio', recipient: '+15005550666', sender_name: null }),
        smsMessage('sent-fine', { provider_name: 'sandbox' }),
      ]),
    });
    await waitFor(() => twilio.creates.some((c) => c.form.To === '+15005550666'), 10_000, 'the hanging provider call');
    const signalledAt = Date.now();
    serve.child.kill('SIGTERM');
    const res = await batch;
    const answeredAfter = Date.now() - signalledAt;
    const [code] = (await once(serve.child, 'exit')) as [number | null];

    expect(res.status).toBe(200);
    const answer = (await res.json()) as { successful: unknown[]; failed: unknown[]; fatal: Array<{ id: string; sms_id?: string; error: string }> };
    expect(answer.successful).toEqual([{ id: 'sent-fine', sms_id: expect.any(String) }]);
    expect(answer.failed).toEqual([]);
    expect(answer.fatal).toEqual([{ id: 'hangs', sms_id: expect.any(String), error: expect.any(String) }]);
    expect(answeredAfter).toBeLessThan(3_000);
    expect(code).toBe(0);

    const ledger = new BetterSqlite3(join(dir, 'ledger.db'), { readonly: true });
    const row = ledger.prepare(`select state from messages where activity_key = 'hangs'`).get() as { state: string };
    ledger.close();
    expect(row.state).toBe('uncertain');
  }, 30_000);
});
