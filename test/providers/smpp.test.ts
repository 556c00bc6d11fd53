/** The SMPP plugin against a fake SMSC speaking real PDUs over TCP (test/fakes/smpp.ts); its tables are in smpp-tables.test.ts. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { smpp, type SmppConfig } from '../../providers/smpp/index.js';
import type { InboundSms, ReceiptEvent, SendRequest, SmsProvider } from '../../providers/types.js';
import { startSmppFake, type SmppFake } from '../fakes/smpp.js';
import { createSmppPlugin, noAbort, sendRequest } from '../helpers/providers.js';
import { waitFor } from '../helpers/gateway.js';

let fake: SmppFake;
const received: ReceiptEvent[] = [];
const inbound: InboundSms[] = [];
const open: SmsProvider[] = [];

function plugin(overrides: Partial<Record<keyof SmppConfig, unknown>> = {}, target: SmppFake = fake): SmsProvider {
  return createSmppPlugin(target, { received, inbound, open }, overrides);
}
const bound = async (target: SmppFake = fake, sessions = 1) => waitFor(() => target.boundSessions() === sessions, 5_000, 'the bind');
const request = (overrides: Partial<SendRequest> = {}) => sendRequest('http://127.0.0.1:1', 'smpp', overrides);

beforeAll(async () => {
  fake = await startSmppFake({ receipts: 'after' });
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close?.()));
  fake.refuseBinds = false;
  fake.answerEnquireLinks = true;
  fake.release();
  fake.nextStatuses.length = 0;
  received.length = 0;
  inbound.length = 0;
});
afterAll(async () => fake.close());

describe('smpp plugin against the fake SMSC', () => {
  it('binds as a transceiver with system_id and system_type, sends, and unbinds on close', async () => {
    const provider = plugin({ system_type: 'CRM' });
    await bound();
    expect(fake.binds.at(-1)).toEqual({ systemId: 'gateway', systemType: 'CRM', accepted: true });
    const result = await provider.send(request(), noAbort());
    const submit = fake.submits.at(-1)!;
    expect(result).toEqual({ ok: true, providerMessageIds: [submit.messageId], providerStatus: 'ESME_ROK' });
    expect(submit).toMatchObject({
      sourceTon: 5,
      sourceNpi: 0,
      source: 'Casino',
      destTon: 1,
      destNpi: 1,
      destination: '447700900123',
      registeredDelivery: 1,
      dataCoding: 0,
      esmClass: 0,
      text: 'Your bonus is waiting',
    });
    const unbinds = fake.unbinds;
    await provider.close?.();
    expect(fake.unbinds).toBe(unbinds + 1);
  });

  it('keeps the bind alive with enquire_link, and rebinds when the SMSC stops answering them', async () => {
    const provider = plugin({ enquire_link: '30ms', response_timeout: '100ms' });
    await bound();
    const links = fake.enquireLinks;
    await waitFor(() => fake.enquireLinks >= links + 3, 5_000, 'enquire_links');
    const binds = fake.binds.length;
    fake.answerEnquireLinks = false;
    await waitFor(() => fake.binds.length > binds, 5_000, 'a rebind after unanswered enquire_link');
    fake.answerEnquireLinks = true;
    await bound();
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: true });
  });

  it('answers transient at once while its bind is refused, and keeps trying to bind', async () => {
    fake.refuseBinds = true;
    const before = fake.binds.length;
    const provider = plugin();
    await waitFor(() => fake.binds.length >= before + 2, 5_000, 'two refused binds');
    expect(fake.binds.slice(before).every((b) => !b.accepted)).toBe(true);
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: false, kind: 'transient', code: 'bind_down' });
    fake.refuseBinds = false;
    await bound();
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: true });
  });

  it('refuses a bind with a wrong password', async () => {
    const before = fake.binds.length;
    const provider = plugin({ password: 'wrong' });
    await waitFor(() => fake.binds.length > before, 5_000, 'a bind attempt');
    expect(fake.binds.at(-1)!.accepted).toBe(false);
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: false, code: 'bind_down' });
  });

  it('keeps at most `window` submit_sm outstanding and sends the rest as answers come back', async () => {
    const provider = plugin({ window: 4 });
    await bound();
    fake.hold = true;
    fake.maxOutstanding = 0;
    const sends = Array.from({ length: 10 }, () => provider.send(request(), noAbort()));
    await waitFor(() => fake.outstanding() === 4, 5_000, 'a full window');
    const seen = fake.submits.length;
    fake.release();
    const results = await Promise.all(sends);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(fake.maxOutstanding).toBe(4);
    expect(fake.submits.length).toBeGreaterThanOrEqual(seen + 6);
  });

  it('gives up a window wait unsent when the deadline passes', async () => {
    const provider = plugin({ window: 1 });
    await bound();
    fake.hold = true;
    const first = provider.send(request(), noAbort());
    await waitFor(() => fake.outstanding() === 1, 5_000, 'the first submit');
    const second = await provider.send(request({ deadline: Date.now() + 50 }), noAbort());
    expect(second).toMatchObject({ ok: false, kind: 'transient', code: 'window_full' });
    fake.release();
    expect(await first).toMatchObject({ ok: true });
  });

  it.each([
    ['ESME_RTHROTTLED', 0x58, 'transient'],
    ['ESME_RMSGQFUL', 0x14, 'transient'],
    ['ESME_RINVDSTADR', 0x0b, 'permanent'],
  ])('classifies a submit_sm_resp of %s as %s, nothing sent', async (name, status, kind) => {
    const provider = plugin();
    await bound();
    fake.nextStatuses.push(status);
    const result = await provider.send(request(), noAbort());
    expect(result).toMatchObject({ ok: false, kind, code: name });
    expect(result).not.toHaveProperty('ambiguous');
  });

  it('answers uncertain when the SMSC drops the connection after the submit_sm went out, then rebinds', async () => {
    const provider = plugin();
    await bound();
    const binds = fake.binds.length;
    fake.hold = true;
    const pending = provider.send(request(), noAbort());
    await waitFor(() => fake.outstanding() === 1, 5_000, 'the submit');
    fake.dropConnections();
    expect(await pending).toMatchObject({ ok: false, kind: 'transient', code: 'bind_lost', ambiguous: true });
    fake.hold = false;
    await waitFor(() => fake.binds.length > binds && fake.boundSessions() === 1, 5_000, 'the rebind');
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: true });
  });

  it("sends a long GSM-7 message as concatenated parts with one UDH reference, and passes on every part's receipt", async () => {
    const provider = plugin();
    await bound();
    const text = 'Match day! '.repeat(30).trim();
    const result = await provider.send(request({ text, segments: 3 }), noAbort());
    const parts = fake.submits.slice(-3);
    expect(result).toEqual({ ok: true, providerMessageIds: parts.map((p) => p.messageId), providerStatus: 'ESME_ROK' });
    const reference = parts[0]!.udh![3];
    expect(parts.map((p) => [...p.udh!])).toEqual([1, 2, 3].map((seq) => [5, 0, 3, reference, 3, seq]));
    expect(parts.every((p) => p.esmClass & 0x40)).toBeTruthy();
    expect(parts.map((p) => p.text).join('')).toBe(text);
    await waitFor(() => received.length >= 3, 5_000, 'three receipts');
    expect(received.map((e) => e.providerMessageId).sort()).toEqual(parts.map((p) => p.messageId).sort());
    expect(received.every((e) => e.perPart && e.status === 'delivered')).toBe(true);
  });

  it('offers a part refused for now again when other parts of the message went out, instead of failing half a message', async () => {
    const provider = plugin();
    await bound();
    const before = fake.submits.length;
    fake.nextStatuses.push(0, 0x58, 0);
    const result = await provider.send(request({ text: 'Jackpot night! '.repeat(20), segments: 2 }), noAbort());
    const submits = fake.submits.slice(before);
    expect(submits.map((s) => s.udh![5])).toEqual([1, 2, 2]);
    expect(result).toEqual({ ok: true, providerMessageIds: [submits[0]!.messageId, submits[2]!.messageId], providerStatus: 'ESME_ROK' });
  });

  it('answers partially sent (permanent) when a refused part still cannot go before the send times out', async () => {
    const provider = plugin();
    await bound();
    fake.nextStatuses.push(0, ...Array<number>(50).fill(0x58));
    const result = await provider.send(request({ text: 'Jackpot night! '.repeat(20), segments: 2 }), AbortSignal.timeout(300));
    expect(result).toMatchObject({ ok: false, kind: 'permanent', code: 'partially_sent' });
  });

  it('sends UCS-2 as data_coding 8, long ones in parts of 67 code units', async () => {
    const provider = plugin();
    await bound();
    await provider.send(request({ text: 'Бонус ждёт 🎁', encoding: 'ucs2' }), noAbort());
    expect(fake.submits.at(-1)).toMatchObject({ dataCoding: 8, text: 'Бонус ждёт 🎁', esmClass: 0 });
    const long = 'Ставка дня '.repeat(10);
    await provider.send(request({ text: long, encoding: 'ucs2', segments: 2 }), noAbort());
    const parts = fake.submits.slice(-2);
    expect(parts.every((p) => p.dataCoding === 8 && p.udh?.length === 6)).toBe(true);
    expect(parts.map((p) => p.text).join('')).toBe(long);
  });

  it('sends an international sender as TON 1 NPI 1 without the +', async () => {
    const provider = plugin();
    await bound();
    await provider.send(request({ from: '+447700900999' }), noAbort());
    expect(fake.submits.at(-1)).toMatchObject({ sourceTon: 1, sourceNpi: 1, source: '447700900999' });
  });

  it('hands a mobile-originated deliver_sm to inbound handling, never to receipts, and acknowledges it', async () => {
    plugin();
    await bound();
    expect(
      await fake.sendDeliverSm({ source_addr_ton: 1, source_addr: '447700900123', destination_addr: 'Casino', esm_class: 0, short_message: 'STOP' }),
    ).toEqual([0]);
    expect(received).toEqual([]);
    expect(inbound).toEqual([{ providerMessageId: expect.stringMatching(/^smpp-/), from: '+447700900123', to: 'Casino', text: 'STOP' }]);
  });

  it("takes receipt text in an unflagged deliver_sm as a player's message, unless receipts_without_esm_class says otherwise", async () => {
    const forged = {
      source_addr_ton: 1,
      source_addr: '447700900123',
      destination_addr: 'Casino',
      esm_class: 0,
      short_message: 'id:10001 sub:001 dlvrd:001 submit date:2611240400 done date:2611240400 stat:UNDELIV err:001 text:',
    };
    const strict = plugin();
    await bound();
    expect(await fake.sendDeliverSm(forged)).toEqual([0]);
    expect(received).toEqual([]);
    expect(inbound.map((m) => m.text)).toEqual([forged.short_message]);
    await strict.close?.();
    await waitFor(() => fake.boundSessions() === 0, 5_000, 'the unbind');
    plugin({ receipts_without_esm_class: true });
    await bound();
    expect(await fake.sendDeliverSm(forged)).toEqual([0]);
    expect(received).toEqual([{ providerMessageId: '10001', providerStatus: 'UNDELIV', status: 'undelivered', errorCode: '001', perPart: true }]);
  });

  it("reads a player's text from message_payload when short_message is empty", async () => {
    plugin();
    await bound();
    expect(await fake.sendDeliverSm({ source_addr_ton: 1, source_addr: '447700900123', esm_class: 0, short_message: '', message_payload: 'STOP' })).toEqual([
      0,
    ]);
    expect(inbound.map((m) => m.text)).toEqual(['STOP']);
  });

  it("answers ESME_RX_T_APPN to a player's message where nothing takes inbound messages, so the SMSC offers it again", async () => {
    const config = smpp.configSchema.parse({
      type: 'smpp',
      host: fake.host,
      port: fake.port,
      system_id: fake.systemId,
      password: fake.password,
      rebind_min: '20ms',
    });
    open.push(smpp.create('smpp', config, { logger: pino({ level: 'silent' }), now: Date.now, deliverReceipts: async () => {} }));
    await bound();
    expect(await fake.sendDeliverSm({ source_addr: '447700900123', esm_class: 0, short_message: 'STOP' })).toEqual([0x64]);
  });

  it('hands on a receipt whose id is __proto__ as a plain string, like any other', async () => {
    plugin();
    await bound();
    await fake.sendDeliverSm({
      esm_class: 0x04,
      short_message: 'id:__proto__ sub:001 dlvrd:001 submit date:2611240400 done date:2611240400 stat:DELIVRD err:000 text:',
    });
    expect(received).toEqual([{ providerMessageId: '__proto__', providerStatus: 'DELIVRD', status: 'delivered', perPart: true }]);
  });

  it('drops a connection that sends a malformed PDU, rebinds, and sends again', async () => {
    const provider = plugin();
    await bound();
    const binds = fake.binds.length;
    // A command_length past the package's 16 KiB limit: the stream cannot be read on from there.
    const header = Buffer.alloc(16);
    header.writeUInt32BE(1_000_000, 0);
    header.writeUInt32BE(0x00000005, 4);
    fake.sendRaw(header);
    await waitFor(() => fake.binds.length > binds && fake.boundSessions() === 1, 5_000, 'the rebind');
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: true });
  });

  it('answers an unknown command with generic_nack and stays bound', async () => {
    const provider = plugin();
    await bound();
    const binds = fake.binds.length;
    const pdu = Buffer.alloc(16);
    pdu.writeUInt32BE(16, 0);
    pdu.writeUInt32BE(0x00000077, 4); // no such command
    pdu.writeUInt32BE(0, 8);
    pdu.writeUInt32BE(4242, 12);
    const nacks = fake.genericNacks;
    fake.sendRaw(pdu);
    await waitFor(() => fake.genericNacks === nacks + 1, 5_000, 'the generic_nack');
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: true });
    expect(fake.binds.length).toBe(binds);
  });

  it('refuses receipts over HTTP: they only come over the bind', async () => {
    const provider = plugin();
    const parsed = await provider.parseReceipt({
      method: 'POST',
      publicUrl: 'http://x/dlr/smpp',
      query: {},
      headers: {},
      contentType: 'text/plain',
      rawBody: Buffer.from('id:1 stat:DELIVRD'),
    });
    expect(parsed).toMatchObject({ ok: false });
  });
});

describe('smpp receipts before the submit_sm_resp, as TLVs', () => {
  let early: SmppFake;
  beforeAll(async () => {
    early = await startSmppFake({ receipts: 'before', receiptAs: 'tlv', receiptStat: 'UNDELIV' });
  });
  afterAll(async () => early.close());

  it('acknowledges a receipt that beats the submit_sm_resp once it is handed on', async () => {
    const provider = plugin({}, early);
    await bound(early);
    const result = await provider.send(request(), noAbort());
    expect(result).toMatchObject({ ok: true });
    expect(received).toEqual([{ providerMessageId: early.submits.at(-1)!.messageId, providerStatus: 'UNDELIVERABLE', status: 'undelivered', perPart: true }]);
    expect(early.receiptAnswers).toEqual([0]);
  });
});

describe('smpp receipts whose text writes the id in decimal', () => {
  let decimal: SmppFake;
  beforeAll(async () => {
    decimal = await startSmppFake({ receipts: 'after', decimalReceiptIds: true });
  });
  afterAll(async () => decimal.close());

  it('match their part with receipt_id_format decimal_to_hex', async () => {
    const provider = plugin({ receipt_id_format: 'decimal_to_hex' }, decimal);
    await bound(decimal);
    const result = await provider.send(request(), noAbort());
    await waitFor(() => received.length === 1, 5_000, 'the receipt');
    expect(result).toMatchObject({ ok: true, providerMessageIds: [received[0]!.providerMessageId] });
  });
});

describe('smpp over TLS', () => {
  let secure: SmppFake;
  let cert: string;
  beforeAll(async () => {
    // A throwaway self-signed certificate for 127.0.0.1 (openssl, see .ci/run).
    const dir = mkdtempSync(join(tmpdir(), 'smpp-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    secure = await startSmppFake({ tls: { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert } });
    rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => secure.close());

  it("binds and sends over TLS when the SMSC's certificate verifies against the configured CA", async () => {
    const provider = plugin({ tls: { ca: cert } }, secure);
    await bound(secure);
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: true });
  });

  it('never binds to an SMSC whose certificate does not verify', async () => {
    const provider = plugin({ tls: true }, secure);
    const before = secure.binds.length;
    const failures = secure.tlsFailures;
    // Several attempts go by, each a refused handshake, without any bind_transceiver reaching the SMSC.
    await waitFor(() => secure.tlsFailures >= failures + 2, 5_000, 'failed handshakes');
    expect(secure.binds.length).toBe(before);
    expect(await provider.send(request(), noAbort())).toMatchObject({ ok: false, code: 'bind_down' });
  });
});
