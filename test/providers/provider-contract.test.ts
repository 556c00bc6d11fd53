/**
 * One contract suite for every provider plugin (docs/design.md §7: one contract suite per interface): what the gateway relies
 * on from `SmsProvider`, run against the sandbox and against the Twilio, Vonage, Infobip and Sinch plugins talking to
 * their fakes.
 * Receipts are the ones each provider really emits (posted over HTTP to a capture server), not hand-made.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smpp } from '../../providers/smpp/index.js';
import type { IncomingReceipt, ReceiptEvent, SendRequest, SendResult, SmsProvider } from '../../providers/types.js';
import { startInfobipFake } from '../fakes/infobip.js';
import { startSinchFake } from '../fakes/sinch.js';
import { startSmppFake } from '../fakes/smpp.js';
import { startTwilioFake } from '../fakes/twilio.js';
import { startVonageFake } from '../fakes/vonage.js';
import { waitFor } from '../helpers/gateway.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';
import { startReceiptCapture, type ReceiptCapture } from '../helpers/receipt-capture.js';

interface Harness {
  provider: SmsProvider;
  /** Recipients the provider (or its fake) answers as sent, refused for good, and refused for now. */
  recipients: { deliverable: string; permanent: string; transient: string };
  /** Has the provider emit a positive receipt for a sent message and returns it as the /dlr route would see it. */
  deliveredReceipt?(request: SendRequest, sent: Extract<SendResult, { ok: true }>): Promise<IncomingReceipt>;
  /** The same receipt with its content changed after signing. */
  forge?(receipt: IncomingReceipt): IncomingReceipt;
  /**
   * For a plugin whose receipts arrive over its own connection (ProviderDeps.deliverReceipts, e.g. SMPP) instead
   * of /dlr: has the provider emit a positive receipt and returns the events the plugin handed on.
   */
  pushedReceipt?(request: SendRequest, sent: Extract<SendResult, { ok: true }>): Promise<ReceiptEvent[]>;
  close(): Promise<void>;
}

/** Plugins that push receipts through ProviderDeps.deliverReceipts rather than parse them from /dlr requests. */
const PUSHES_RECEIPTS = new Set(['smpp']);

const tamperBody = (r: IncomingReceipt): IncomingReceipt => ({ ...r, rawBody: Buffer.from(r.rawBody.toString().replace('delivered', 'failed')) });

const harnesses: Record<string, (capture: ReceiptCapture) => Promise<Harness>> = {
  async sandbox(capture) {
    const provider = createPlugin('sandbox', { dlr_delay_ms: 0, receipt_secret: 'sandbox-secret' });
    return {
      provider,
      recipients: { deliverable: '+447700900123', permanent: '+447700900004', transient: '+447700900005' },
      async deliveredReceipt(request) {
        return waitFor(() => capture.receipts.find((r) => r.rawBody.toString().includes(request.smsId)), 5_000, 'sandbox receipt');
      },
      forge: tamperBody,
      close: async () => provider.close?.(),
    };
  },

  async twilio(capture) {
    const fake = await startTwilioFake();
    const provider = createPlugin('twilio', { account_sid: fake.accountSid, auth_token: fake.authToken, from: '+15005550006', base_url: fake.url });
    return {
      provider,
      recipients: { deliverable: '+447700900123', permanent: '+15005550001', transient: '+15005550429' },
      async deliveredReceipt(request) {
        const create = fake.creates.find((c) => c.form.StatusCallback?.split('#')[0] === request.callbackUrl)!;
        await fake.postStatusCallback(request.callbackUrl, fake.callbackParams(create, 'delivered'));
        return capture.receipts.at(-1)!;
      },
      forge: tamperBody,
      async close() {
        await provider.close?.();
        await fake.close();
      },
    };
  },

  async vonage(capture) {
    const fake = await startVonageFake({ signatureSecret: 'vonage-secret', signatureMethod: 'sha512' });
    const provider = createPlugin('vonage', {
      api_key: fake.apiKey,
      api_secret: fake.apiSecret,
      base_url: fake.url,
      signature_secret: 'vonage-secret',
      signature_method: 'sha512',
    });
    return {
      provider,
      recipients: { deliverable: '+447700900123', permanent: '+447700909907', transient: '+447700909901' },
      async deliveredReceipt(request) {
        const submit = fake.submits.find((s) => s.fields['client-ref'] === request.smsId)!;
        await fake.sendReceipt(submit.fields.callback!, fake.receiptFields(submit, 0, 'delivered'), { transport: 'json' });
        return capture.receipts.at(-1)!;
      },
      forge: tamperBody,
      async close() {
        await provider.close?.();
        await fake.close();
      },
    };
  },

  async infobip(capture) {
    const fake = await startInfobipFake();
    const provider = createPlugin('infobip', { api_key: fake.apiKey, base_url: fake.url, webhook_secret: 'infobip-webhook-secret-0123' });
    return {
      provider,
      recipients: { deliverable: '+447700900123', permanent: '+15005550001', transient: '+15005550429' },
      async deliveredReceipt(request) {
        const send = fake.sends.find((s) => s.callbackData === request.smsId)!;
        await fake.postReport(send.notifyUrl, [fake.result(send, 'DELIVERED_TO_HANDSET')]);
        return capture.receipts.at(-1)!;
      },
      // Infobip signs nothing: the URL's token vouches for one sms_id, so a report about another message is forged.
      forge: (r) => ({ ...r, rawBody: Buffer.from(r.rawBody.toString().replaceAll(r.query.sms_id!, '0190c0de-0000-7000-8000-999999999999')) }),
      async close() {
        await provider.close?.();
        await fake.close();
      },
    };
  },

  async sinch(capture) {
    const fake = await startSinchFake();
    const provider = createPlugin('sinch', {
      service_plan_id: fake.servicePlanId,
      api_token: fake.apiToken,
      base_url: fake.url,
      webhook_secret: 'sinch-webhook-secret-01234',
    });
    return {
      provider,
      recipients: { deliverable: '+447700900123', permanent: '+15005550001', transient: '+15005550429' },
      async deliveredReceipt(request) {
        const batch = fake.batches.find((b) => b.clientReference === request.smsId)!;
        await fake.postCallback(batch.callbackUrl, fake.report(batch, 'Delivered'));
        return capture.receipts.at(-1)!;
      },
      // Sinch signs nothing: the URL's token vouches for one sms_id, so a report about another message is forged.
      forge: (r) => ({ ...r, rawBody: Buffer.from(r.rawBody.toString().replaceAll(r.query.sms_id!, '0190c0de-0000-7000-8000-999999999999')) }),
      async close() {
        await provider.close?.();
        await fake.close();
      },
    };
  },

  async smpp() {
    const fake = await startSmppFake({ receipts: 'none' });
    const pushed: ReceiptEvent[] = [];
    const config = smpp.configSchema.parse({ type: 'smpp', host: fake.host, port: fake.port, system_id: fake.systemId, password: fake.password });
    const provider = smpp.create('smpp', config, {
      logger: pino({ level: 'silent' }),
      now: Date.now,
      deliverReceipts: async (events) => void pushed.push(...events),
    });
    await waitFor(() => fake.boundSessions() === 1, 5_000, 'the SMPP bind');
    return {
      provider,
      recipients: { deliverable: '+447700900123', permanent: '+447700909911', transient: '+447700909958' },
      async pushedReceipt(_request, sent) {
        const seen = pushed.length;
        await fake.sendReceipt(sent.providerMessageIds[0]!, 'DELIVRD');
        await fake.sendReceipt(sent.providerMessageIds[0]!, 'DELIVRD');
        return pushed.slice(seen);
      },
      async close() {
        await provider.close?.();
        await fake.close();
      },
    };
  },
};

describe.each(Object.keys(harnesses))('SmsProvider contract: %s', (type) => {
  let capture: ReceiptCapture;
  let h: Harness;
  // Twilio signs the exact callback URL, so each harness gets the capture server as its public URL.
  const request = (to: string) => sendRequest(capture.url, type, { to });

  beforeAll(async () => {
    capture = await startReceiptCapture();
    h = await harnesses[type]!(capture);
  });
  afterAll(async () => {
    await h.close();
    await capture.close();
  });

  it('names itself with its config key and its type', () => {
    expect(h.provider.name).toBe(type);
    expect(h.provider.type).toBe(type);
  });

  it("answers ok with the provider's message ids for a deliverable message", async () => {
    const result = await h.provider.send(request(h.recipients.deliverable), noAbort());
    expect(result).toMatchObject({ ok: true, providerMessageIds: [expect.stringMatching(/\S/)] });
  });

  it('answers permanent, with an error text, for a message that can never go out', async () => {
    expect(await h.provider.send(request(h.recipients.permanent), noAbort())).toMatchObject({
      ok: false,
      kind: 'permanent',
      error: expect.stringMatching(/\S/),
    });
  });

  it('answers transient, with an error text, when a retry may succeed', async () => {
    expect(await h.provider.send(request(h.recipients.transient), noAbort())).toMatchObject({
      ok: false,
      kind: 'transient',
      error: expect.stringMatching(/\S/),
    });
  });

  it('resolves rather than throws when the signal has already fired', async () => {
    await expect(h.provider.send(request(h.recipients.deliverable), AbortSignal.abort())).resolves.toHaveProperty('ok');
  });

  describe.skipIf(PUSHES_RECEIPTS.has(type))('receipts', () => {
    let req: SendRequest;
    let receipt: IncomingReceipt;
    let sentIds: string[];
    beforeAll(async () => {
      req = request(h.recipients.deliverable);
      const sent = await h.provider.send(req, noAbort());
      if (!sent.ok) throw new Error(`send failed: ${sent.error}`);
      sentIds = sent.providerMessageIds;
      receipt = await h.deliveredReceipt!(req, sent);
    });

    it("a genuine receipt parses into events carrying our sms_id and the send's provider id", async () => {
      const parsed = await h.provider.parseReceipt(receipt);
      expect(parsed.ok).toBe(true);
      // A receipt request may carry several events (the sandbox batches them); ours is among them.
      const ours = parsed.ok ? parsed.events.find((e) => e.smsId === req.smsId) : undefined;
      expect(ours).toMatchObject({ status: 'delivered', providerStatus: expect.stringMatching(/\S/) });
      expect(sentIds).toContain(ours!.providerMessageId);
    });

    it('a receipt changed after signing is refused with a reason', async () => {
      expect(await h.provider.parseReceipt(h.forge!(receipt))).toMatchObject({ ok: false, reason: expect.stringMatching(/\S/) });
    });

    it('parsing is repeatable: a duplicated receipt gives the same events', async () => {
      expect(await h.provider.parseReceipt(receipt)).toEqual(await h.provider.parseReceipt(receipt));
    });
  });

  describe.runIf(PUSHES_RECEIPTS.has(type))("receipts over the provider's own connection", () => {
    it("are handed on as events carrying the send's provider id, the same each time the provider repeats one", async () => {
      const sent = await h.provider.send(request(h.recipients.deliverable), noAbort());
      if (!sent.ok) throw new Error(`send failed: ${sent.error}`);
      const events = await h.pushedReceipt!(request(h.recipients.deliverable), sent);
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({ status: 'delivered', providerStatus: expect.stringMatching(/\S/), providerMessageId: sent.providerMessageIds[0] });
      expect(events[1]).toEqual(events[0]);
    });

    it('are not taken from /dlr requests, which nobody authenticated', async () => {
      const forged: IncomingReceipt = {
        method: 'POST',
        publicUrl: `${capture.url}/dlr/${type}`,
        query: {},
        headers: {},
        contentType: 'text/plain',
        rawBody: Buffer.from('id:1 stat:DELIVRD err:000'),
      };
      expect(await h.provider.parseReceipt(forged)).toMatchObject({ ok: false, reason: expect.stringMatching(/\S/) });
    });
  });
});
