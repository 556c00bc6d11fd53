/**
 * The SMPP plugin against an SMSC nobody here wrote (docs/providers.md §8.5): Debian's Net::SMPP (libnet-smpp-perl) reads
 * and writes every PDU of test/fakes/smsc.pl, so the plugin's PDUs are checked by a second reading of SMPP 3.4 (the
 * fake in test/fakes/smpp.ts shares the plugin's `smpp` package). What each field must hold is from SMPP 3.4
 * (§4.1.5 bind_transceiver, §4.4.1 submit_sm, §5.2.12 esm_class, §5.2.19 data_coding, §5.3.2 TLVs, appendix B for
 * the receipt text).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SmppConfig } from '../../providers/smpp/index.js';
import type { InboundSms, ReceiptEvent, SendRequest, SmsProvider } from '../../providers/types.js';
import { startNetSmppSmsc, type NetSmppPdu, type NetSmppSmsc } from '../fakes/net-smpp-smsc.js';
import { waitFor } from '../helpers/gateway.js';
import { createSmppPlugin, noAbort, sendRequest } from '../helpers/providers.js';

let smsc: NetSmppSmsc;
const received: ReceiptEvent[] = [];
const inbound: InboundSms[] = [];
const open: SmsProvider[] = [];

function plugin(overrides: Partial<Record<keyof SmppConfig, unknown>> = {}): SmsProvider {
  return createSmppPlugin(smsc, { received, inbound, open }, overrides);
}

/** A provider bound to the SMSC (its bind_transceiver answered), ready to send. */
async function boundPlugin(overrides: Partial<Record<keyof SmppConfig, unknown>> = {}): Promise<SmsProvider> {
  const from = smsc.events.length;
  const provider = plugin(overrides);
  await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'bind_transceiver', 5_000, from);
  const ping = await waitFor(
    async () => {
      const result = await provider.send(request({ text: 'ping' }), noAbort());
      return result.ok ? result : undefined;
    },
    5_000,
    'a send over the new bind',
  );
  // The SMSC reports on its own pipe: the ping's submit_sm is in `events` before the test reads what follows it.
  await smsc.waitFor((e) => e.event === 'accepted' && e.message_id === ping.providerMessageIds[0]);
  return provider;
}

/** The submit_sm PDUs the SMSC read since event `from`, once there are `count` of them. */
async function submits(from: number, count: number): Promise<NetSmppPdu[]> {
  await waitFor(() => submitsSince(from).length >= count, 5_000, `${count} submit_sm`);
  await new Promise((r) => setTimeout(r, 50)); // and no more than that
  return submitsSince(from);
}

const request = (overrides: Partial<SendRequest> = {}) => sendRequest('http://127.0.0.1:1', 'smpp', { to: '+447700900123', from: 'Casino', ...overrides });
const submitsSince = (from: number) => smsc.events.slice(from).filter((e): e is NetSmppPdu => e.event === 'pdu' && e.name === 'submit_sm');
const bytes = (hex: string | undefined) => Buffer.from(hex ?? '', 'hex');
/** GSM-7 unpacked (one septet per octet) for the letters, digits, space and `.` these tests use: ASCII's values. */
const gsm = (octets: Buffer) => octets.toString('latin1');
const ucs2 = (octets: Buffer) => octets.swap16().toString('utf16le');

beforeAll(async () => {
  smsc = await startNetSmppSmsc();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close?.()));
  received.length = 0;
  inbound.length = 0;
});
afterAll(async () => smsc.close());

describe('bind and submit_sm as Net::SMPP reads them', () => {
  it('binds as a transceiver with the configured system_id, password and interface version 3.4', async () => {
    const from = smsc.events.length;
    await boundPlugin({ system_type: 'CRM' });
    const bind = smsc.events.slice(from).find((e): e is NetSmppPdu => e.event === 'pdu' && e.name === 'bind_transceiver')!;
    expect(bind).toMatchObject({ command_id: '0x00000009', system_id: smsc.systemId, password: smsc.password, system_type: 'CRM', interface_version: 0x34 });
  });

  it('a wrong password is refused by the SMSC and nothing is sent over the unbound session', async () => {
    const from = smsc.events.length;
    const provider = plugin({ password: 'wrong' });
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'bind_transceiver', 5_000, from);
    const result = await provider.send(request(), noAbort());
    expect(result).toMatchObject({ ok: false, kind: 'transient', code: 'bind_down' });
    expect(submitsSince(from)).toEqual([]);
  });

  it('a GSM-7 text goes as data_coding 0, one septet per octet, with a receipt asked for', async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    const result = await provider.send(request({ text: 'Your bonus is waiting 100.' }), noAbort());
    const [submit] = await submits(from, 1);
    expect(submit).toMatchObject({
      source_addr_ton: 5, // alphanumeric sender
      source_addr: 'Casino',
      dest_addr_ton: 1,
      dest_addr_npi: 1,
      destination_addr: '447700900123',
      esm_class: 0,
      registered_delivery: 1,
      data_coding: 0,
      tlv: {},
    });
    expect(gsm(bytes(submit!.short_message))).toBe('Your bonus is waiting 100.');
    await smsc.waitFor((e) => e.event === 'accepted' && e.seq === submit!.seq);
    expect(result).toEqual({ ok: true, providerMessageIds: [smsc.acceptedIds().at(-1)], providerStatus: 'ESME_ROK' });
  });

  it('a UCS-2 text goes as data_coding 8, UTF-16 big-endian', async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    expect((await provider.send(request({ text: 'Ваш бонус 🎰', encoding: 'ucs2' }), noAbort())).ok).toBe(true);
    const [submit] = await submits(from, 1);
    expect(submit).toMatchObject({ data_coding: 8, esm_class: 0 });
    expect(ucs2(bytes(submit!.short_message))).toBe('Ваш бонус 🎰');
  });
});

describe('long messages, each way SMPP 3.4 offers', () => {
  const long = `${'Free spins for you. '.repeat(15)}End`; // 303 GSM-7 characters: two parts of 153
  const longUcs2 = 'Бонус '.repeat(20); // 120 UCS-2 units: two parts of 67

  it('by UDH: esm_class 0x40 and a 6-octet concatenation header per part', async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    const result = await provider.send(request({ text: long, segments: 2 }), noAbort());
    const parts = await submits(from, 2);
    expect(parts).toHaveLength(2);
    const headers = parts.map((p) => bytes(p.short_message).subarray(0, 6));
    for (const [i, p] of parts.entries()) {
      expect(p).toMatchObject({ esm_class: 0x40, data_coding: 0 });
      expect([...headers[i]!]).toEqual([0x05, 0x00, 0x03, headers[0]![3], 2, i + 1]);
    }
    expect(parts.map((p) => gsm(bytes(p.short_message).subarray(6))).join('')).toBe(long);
    await smsc.waitFor((e) => e.event === 'accepted' && e.seq === parts[1]!.seq);
    expect(result).toEqual({ ok: true, providerMessageIds: smsc.acceptedIds().slice(-2), providerStatus: 'ESME_ROK' });
  });

  it('by SAR TLVs: no header in short_message, sar_msg_ref_num, sar_total_segments and sar_segment_seqnum per part', async () => {
    const provider = await boundPlugin({ long_messages: 'sar' });
    const from = smsc.events.length;
    expect((await provider.send(request({ text: longUcs2, encoding: 'ucs2', segments: 2 }), noAbort())).ok).toBe(true);
    const parts = await submits(from, 2);
    expect(parts).toHaveLength(2);
    const ref = parts[0]!.tlv['0x020c'];
    expect(ref).toMatch(/^[0-9a-f]{4}$/); // 2 octets (SMPP 3.4 §5.3.2.22)
    for (const [i, p] of parts.entries()) {
      expect(p).toMatchObject({ esm_class: 0, data_coding: 8 });
      expect(p.tlv).toEqual({ '0x020c': ref, '0x020e': '02', '0x020f': `0${i + 1}` });
    }
    expect(parts.map((p) => ucs2(bytes(p.short_message))).join('')).toBe(longUcs2);
  });

  it('by message_payload: one submit_sm, an empty short_message, the whole text in the TLV', async () => {
    const provider = await boundPlugin({ long_messages: 'payload' });
    const from = smsc.events.length;
    const result = await provider.send(request({ text: long, segments: 2 }), noAbort());
    const parts = await submits(from, 1);
    expect(parts).toHaveLength(1);
    expect(parts[0]).toMatchObject({ esm_class: 0, data_coding: 0, short_message: '' });
    expect(gsm(bytes(parts[0]!.tlv['0x0424']))).toBe(long);
    await smsc.waitFor((e) => e.event === 'accepted' && e.seq === parts[0]!.seq);
    expect(result).toEqual({ ok: true, providerMessageIds: [smsc.acceptedIds().at(-1)], providerStatus: 'ESME_ROK' });
  });
});

describe('receipts from the SMSC', () => {
  async function sent(provider: SmsProvider): Promise<string> {
    const result = await provider.send(request(), noAbort());
    if (!result.ok) throw new Error(`not sent: ${result.error}`);
    return result.providerMessageIds[0]!;
  }
  const deliverResps = (from: number) => smsc.events.slice(from).filter((e): e is NetSmppPdu => e.event === 'pdu' && e.name === 'deliver_sm_resp');

  it.each([
    ['DELIVRD', 'delivered'],
    ['UNDELIV', 'undelivered'],
    ['EXPIRED', 'undelivered'],
    ['REJECTD', 'failed'],
  ])('as text (appendix B) with stat:%s maps to %s and is acknowledged with deliver_sm_resp 0', async (stat, status) => {
    const provider = await boundPlugin();
    const id = await sent(provider);
    const from = smsc.events.length;
    smsc.deliver({
      source_addr: '447700900123',
      destination_addr: 'Casino',
      esm_class: 0x04,
      text: `id:${id} sub:001 dlvrd:${stat === 'DELIVRD' ? '001' : '000'} submit date:2611281200 done date:2611281201 stat:${stat} err:000 text:Your bonus is`,
    });
    await waitFor(() => received.find((r) => r.providerMessageId === id), 5_000, 'the receipt');
    expect(received).toEqual([expect.objectContaining({ providerMessageId: id, providerStatus: stat, status, perPart: true })]);
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'deliver_sm_resp', 5_000, from);
    expect(deliverResps(from).map((r) => r.status)).toEqual([0]);
  });

  it.each([
    [2, 'DELIVERED', 'delivered'],
    [3, 'EXPIRED', 'undelivered'],
    [5, 'UNDELIVERABLE', 'undelivered'],
    [8, 'REJECTED', 'failed'],
  ])('with receipted_message_id and message_state %i (%s) TLVs maps to %s', async (state, name, status) => {
    const provider = await boundPlugin();
    const id = await sent(provider);
    smsc.deliver({
      source_addr: '447700900123',
      destination_addr: 'Casino',
      esm_class: 0x04,
      text: '',
      // receipted_message_id is a C-octet string (SMPP 3.4 §5.3.2.12); message_state one octet (§5.3.2.35).
      tlv: { receipted_message_id: Buffer.from(`${id}\0`), message_state: Buffer.from([state]) },
    });
    await waitFor(() => received.find((r) => r.providerMessageId === id), 5_000, 'the receipt');
    expect(received).toEqual([expect.objectContaining({ providerMessageId: id, providerStatus: name, status })]);
  });

  it("a player's text (esm_class 0) is an inbound message, not a receipt", async () => {
    await boundPlugin();
    smsc.deliver({ source_addr_ton: 1, source_addr: '447700900123', destination_addr: '447700900999', esm_class: 0, text: 'STOP' });
    await waitFor(() => inbound[0], 5_000, 'the inbound message');
    expect(inbound).toEqual([expect.objectContaining({ from: '+447700900123', to: '447700900999', text: 'STOP' })]);
    expect(received).toEqual([]);
  });
});

describe('answers the SMSC may give', () => {
  it.each([
    ['0x58', 0x58, 'ESME_RTHROTTLED'],
    ['0x14', 0x14, 'ESME_RMSGQFUL'],
  ])('command_status %s refuses for now: transient, nothing sent, not ambiguous', async (_hex, status, code) => {
    const provider = await boundPlugin();
    smsc.answerNext(status);
    const result = await provider.send(request(), noAbort());
    expect(result).toMatchObject({ ok: false, kind: 'transient', code });
    expect(result.ok === false && result.ambiguous).toBeFalsy();
  });

  it('a long message with one part throttled offers that part again and ends sent', async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    smsc.answerNext(0, 0x58);
    const result = await provider.send(request({ text: 'x'.repeat(200), segments: 2 }), noAbort());
    expect(result).toMatchObject({ ok: true });
    expect(await submits(from, 3)).toHaveLength(3);
  });

  it.each([
    [3, 'transient', 'generic_nack:ESME_RINVCMDID'], // the SMSC takes no submit_sm on this bind: its set-up, not the message
    [2, 'permanent', 'generic_nack:ESME_RINVCMDLEN'], // this PDU cannot be read: the same one would be refused again
    [0, 'transient', 'generic_nack:ESME_RUNKNOWNERR'], // a nack that claims success is still no message id
  ])('a generic_nack with command_status %i to a submit_sm is a refusal (%s): nothing sent, no waiting for the timeout', async (status, kind, code) => {
    const provider = await boundPlugin({ response_timeout: '5s' });
    smsc.answerNext(`nack:${status}`);
    const started = Date.now();
    const result = await provider.send(request(), noAbort());
    expect(result).toMatchObject({ ok: false, kind, code });
    expect(result.ok === false && result.ambiguous).toBeFalsy();
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('the session', () => {
  it("answers the SMSC's enquire_link, and sends its own at the configured interval", async () => {
    const from = smsc.events.length;
    await boundPlugin({ enquire_link: '300ms' });
    smsc.enquireLink();
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'enquire_link_resp', 5_000, from);
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'enquire_link', 5_000, from);
  });

  it("answers an unbind from the SMSC's side with unbind_resp, binds again, and sends over the new bind", async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    smsc.unbind();
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'unbind_resp', 5_000, from);
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'bind_transceiver', 5_000, from);
    await waitFor(async () => (await provider.send(request(), noAbort())).ok || undefined, 5_000, 'a send after the rebind');
  });

  it('binds again after the SMSC drops the connection without a word, and sends', async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    smsc.drop();
    await smsc.waitFor((e) => e.event === 'closed', 5_000, from);
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'bind_transceiver', 5_000, from);
    await waitFor(async () => (await provider.send(request(), noAbort())).ok || undefined, 5_000, 'a send after the reconnect');
  });

  it('unbinds when closed', async () => {
    const provider = await boundPlugin();
    const from = smsc.events.length;
    await provider.close?.();
    await smsc.waitFor((e) => e.event === 'pdu' && e.name === 'unbind', 5_000, from);
  });
});
