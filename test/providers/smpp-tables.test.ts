/** The SMPP plugin's decisions as tables: submit_sm_resp classes, part outcomes, receipts, message layout, ids. */
import { isGsmChar } from '@trt2/gsm-charset-utils/lib/SmsUtil.js';
import { describe, expect, it } from 'vitest';
import { combinePartOutcomes, needsPartRetry, readPartOutcome } from '../../providers/smpp/index.js';
import { encodeSmppParts, packSeptets, sourceAddress, toGsmSeptets } from '../../providers/smpp/message.js';
import { canonicalMessageId, classifyDeliverSm, parseSmppReceipt } from '../../providers/smpp/status.js';

describe('one answer from the parts of a message', () => {
  const accepted = (id: string) => ({ kind: 'accepted' as const, messageId: id });
  const refused = (cls: 'permanent' | 'transient', status: string) => ({ kind: 'refused' as const, class: cls, status });
  const lost = { kind: 'lost' as const, reason: 'the bind was lost after the submit_sm went out', code: 'bind_lost' };
  const notSent = { kind: 'not_sent' as const, reason: 'the bind is down', code: 'bind_down' };
  it.each([
    ['every part accepted: sent, ids in part order', [accepted('a'), accepted('b')], { ok: true, providerMessageIds: ['a', 'b'] }],
    [
      'throttled: transient, not ambiguous',
      [refused('transient', 'ESME_RTHROTTLED')],
      { ok: false, kind: 'transient', code: 'ESME_RTHROTTLED', ambiguous: undefined },
    ],
    ['invalid destination: permanent', [refused('permanent', 'ESME_RINVDSTADR')], { ok: false, kind: 'permanent', code: 'ESME_RINVDSTADR' }],
    ['bind lost after the submit went out: uncertain', [lost], { ok: false, kind: 'transient', code: 'bind_lost', ambiguous: true }],
    ['bind down before sending: transient, not ambiguous', [notSent], { ok: false, kind: 'transient', code: 'bind_down', ambiguous: undefined }],
    [
      'one part accepted, one throttled: permanent (a retry would resend part one)',
      [accepted('a'), refused('transient', 'ESME_RTHROTTLED')],
      { ok: false, kind: 'permanent', code: 'partially_sent' },
    ],
    ['a lost part outweighs a refused one', [refused('transient', 'ESME_RTHROTTLED'), lost], { ok: false, kind: 'transient', ambiguous: true }],
    [
      'a permanent refusal outweighs a transient one',
      [refused('transient', 'ESME_RTHROTTLED'), refused('permanent', 'ESME_RINVDSTADR')],
      { ok: false, kind: 'permanent' },
    ],
  ])('%s', (_label, parts, expected) => {
    const result = combinePartOutcomes(parts) as Record<string, unknown>;
    expect(result).toMatchObject(Object.fromEntries(Object.entries(expected).filter(([, v]) => v !== undefined)));
    if ('ambiguous' in expected && expected.ambiguous === undefined) expect(result.ambiguous).toBeUndefined();
  });

  it.each([
    ['one part out, one throttled: offer it again', [accepted('a'), refused('transient', 'ESME_RTHROTTLED')], true],
    ['every part throttled: nothing went out, the CRM retries the whole message', [refused('transient', 'ESME_RTHROTTLED')], false],
    ['one part out, one refused for good: no retry helps', [accepted('a'), refused('permanent', 'ESME_RINVDSTADR')], false],
    ['every part out', [accepted('a'), accepted('b')], false],
  ])('part retry: %s', (_label, parts, expected) => expect(needsPartRetry(parts)).toBe(expected));

  it('treats an accepted submit_sm_resp without a message_id as uncertain (its receipts could never match)', () => {
    expect(readPartOutcome({ kind: 'answered', pdu: { command_status: 0, message_id: '' } as never })).toMatchObject({
      kind: 'lost',
      code: 'malformed_answer',
    });
  });
});

describe('delivery receipts from deliver_sm', () => {
  const text = (stat: string, err = '000') => `id:7f3a sub:001 dlvrd:001 submit date:2611240400 done date:2611240401 stat:${stat} err:${err} text:Your bonus`;
  it.each([
    ['DELIVRD', 'delivered'],
    ['UNDELIV', 'undelivered'],
    ['EXPIRED', 'undelivered'],
    ['DELETED', 'undelivered'],
    ['REJECTD', 'failed'],
    ['UNKNOWN', 'delivery_unknown'],
    ['ENROUTE', 'intermediate'],
    ['ACCEPTD', 'intermediate'],
    ['BOGUS', 'delivery_unknown'],
  ])('receipt text stat:%s maps to %s', (stat, status) => {
    expect(parseSmppReceipt({ esmClass: 0x04, text: text(stat) })).toMatchObject({ messageId: '7f3a', providerStatus: stat, status });
  });

  it.each([
    [2, 'DELIVERED', 'delivered'],
    [3, 'EXPIRED', 'undelivered'],
    [5, 'UNDELIVERABLE', 'undelivered'],
    [8, 'REJECTED', 'failed'],
    [7, 'UNKNOWN', 'delivery_unknown'],
    [1, 'ENROUTE', 'intermediate'],
    [42, 'state_42', 'delivery_unknown'],
  ])('message_state TLV %s (%s) maps to %s, and the TLV id wins over the text', (state, name, status) => {
    expect(parseSmppReceipt({ esmClass: 0x04, text: text('DELIVRD'), receiptedMessageId: 'tlv-id', messageState: state })).toMatchObject({
      messageId: 'tlv-id',
      providerStatus: name,
      status,
    });
  });

  it('keeps a non-zero err: code and drops an all-zero one', () => {
    expect(parseSmppReceipt({ esmClass: 0x04, text: text('UNDELIV', '034') })?.errorCode).toBe('034');
    expect(parseSmppReceipt({ esmClass: 0x04, text: text('DELIVRD') })).not.toHaveProperty('errorCode');
  });

  it.each([
    ['same: every id as it is', 'AbC1', 'receipt_text', 'same', 'AbC1'],
    ['decimal_to_hex: a submit_sm_resp id is kept, lowercased', '1F4A', 'submit', 'decimal_to_hex', '1f4a'],
    ['decimal_to_hex: the receipt text id becomes hex', '8010', 'receipt_text', 'decimal_to_hex', '1f4a'],
    ['decimal_to_hex: the TLV id is in the submit form already', '1F4A', 'receipt_tlv', 'decimal_to_hex', '1f4a'],
    ['decimal_to_hex: a text id that is not decimal is left alone', 'x-1', 'receipt_text', 'decimal_to_hex', 'x-1'],
    ['hex_to_decimal: the receipt text id becomes decimal', '1f4a', 'receipt_text', 'hex_to_decimal', '8010'],
    ['hex_to_decimal: a submit_sm_resp id is kept', '8010', 'submit', 'hex_to_decimal', '8010'],
    ['hex_to_decimal: ids past 64 bits convert exactly', 'ffffffffffffffffff', 'receipt_text', 'hex_to_decimal', '4722366482869645213695'],
  ] as const)('message id %s', (_label, id, from, format, expected) => expect(canonicalMessageId(id, from, format)).toBe(expected));

  it('has no receipt in it: a receipt without an id', () => {
    expect(parseSmppReceipt({ esmClass: 0x04, text: 'stat:DELIVRD err:000' })).toBeNull();
  });
});

describe('what a deliver_sm is, by its esm_class (SMPP 3.4 §5.2.12)', () => {
  const receiptText = 'id:7f3a sub:001 dlvrd:001 submit date:2611240400 done date:2611240401 stat:UNDELIV err:001 text:';
  it.each([
    ['an SMSC delivery receipt (0x04)', { esmClass: 0x04, text: receiptText }, {}, 'receipt'],
    ['an SME delivery acknowledgement (0x08)', { esmClass: 0x08, text: receiptText }, {}, 'receipt'],
    ['an intermediate delivery notification (0x20)', { esmClass: 0x20, text: receiptText.replace('UNDELIV', 'ENROUTE') }, {}, 'receipt'],
    ['a receipt with UDHI and reply-path bits beside its type', { esmClass: 0xc4, text: receiptText }, {}, 'receipt'],
    ['a receipt by TLVs alone', { esmClass: 0x04, text: '', receiptedMessageId: '7f3a', messageState: 5 }, {}, 'receipt'],
    ['a flagged receipt without an id: neither', { esmClass: 0x04, text: 'stat:DELIVRD' }, {}, 'ignored'],
    ["a player's STOP", { esmClass: 0, text: 'STOP' }, {}, 'message'],
    ["a player's text that reads like a receipt: still a message", { esmClass: 0, text: receiptText }, {}, 'message'],
    [
      "a player's text with receipt TLVs on an unflagged PDU: a message",
      { esmClass: 0, text: 'hi', receiptedMessageId: '7f3a', messageState: 5 },
      {},
      'message',
    ],
    ['receipt text without the flag where the provider allows it', { esmClass: 0, text: receiptText }, { textReceiptsWithoutFlag: true }, 'receipt'],
    ['a plain STOP where the provider allows unflagged receipts: still a message', { esmClass: 0, text: 'STOP' }, { textReceiptsWithoutFlag: true }, 'message'],
    ['a manual/user acknowledgement (0x10): neither', { esmClass: 0x10, text: receiptText }, {}, 'ignored'],
    ['a conversation abort (0x18): neither', { esmClass: 0x18, text: 'STOP' }, {}, 'ignored'],
    ['a reserved message type (0x0c): neither', { esmClass: 0x0c, text: receiptText }, {}, 'ignored'],
  ])('%s', (_label, fields, options, kind) => expect(classifyDeliverSm(fields, options).kind).toBe(kind));
});

describe('message layout', () => {
  it.each([
    ['160 GSM-7 characters: one part, no UDH', 'a'.repeat(160), 'gsm7', 1],
    ['161 GSM-7 characters: two parts', 'a'.repeat(161), 'gsm7', 2],
    ['an escape pair at a part boundary is not split', `${'a'.repeat(152)}€${'b'.repeat(10)}`, 'gsm7', 2],
    ['306 septets fill two parts of 153', 'a'.repeat(306), 'gsm7', 2],
    ['70 UCS-2 code units: one part', 'ж'.repeat(70), 'ucs2', 1],
    ['71 UCS-2 code units: two parts', 'ж'.repeat(71), 'ucs2', 2],
    ['a surrogate pair at a part boundary is not split', `${'ж'.repeat(66)}😀${'ж'.repeat(10)}`, 'ucs2', 2],
  ] as const)('%s', (_label, text, encoding, parts) => {
    const result = encodeSmppParts(text, encoding, { gsmPacking: false, reference: 9 });
    if (!result.ok) throw new Error(result.error);
    expect(result.parts).toHaveLength(parts);
    for (const [i, part] of result.parts.entries()) {
      expect(part.dataCoding).toBe(encoding === 'gsm7' ? 0 : 8);
      if (parts > 1) expect([...part.shortMessage.subarray(0, 6)]).toEqual([5, 0, 3, 9, parts, i + 1]);
      expect(part.esmClass).toBe(parts > 1 ? 0x40 : 0);
      expect(part.shortMessage.length).toBeLessThanOrEqual(parts > 1 ? 6 + (encoding === 'gsm7' ? 153 : 134) : encoding === 'gsm7' ? 160 : 140);
    }
  });

  it('knows exactly the characters the gateway plans as GSM-7 (src/sms/encoding.ts), so no planned message is refused', () => {
    const disagree: string[] = [];
    for (let cp = 0; cp < 0x3000; cp++) {
      const ch = String.fromCodePoint(cp);
      if (isGsmChar(ch) !== (toGsmSeptets(ch) !== null)) disagree.push(`U+${cp.toString(16)}`);
    }
    expect(disagree).toEqual([]);
  });

  it('packs GSM-7 septets as 3GPP TS 23.038 shows ("hellohello" → E8 32 9B FD 46 97 D9 EC 37)', () => {
    const septets = toGsmSeptets('hellohello')!.flat();
    expect(packSeptets(septets).toString('hex').toUpperCase()).toBe('E8329BFD4697D9EC37');
  });

  it('packed parts start on a septet boundary after the UDH (one fill bit) and fit 140 octets', () => {
    const result = encodeSmppParts('a'.repeat(200), 'gsm7', { gsmPacking: true, reference: 1 });
    if (!result.ok) throw new Error(result.error);
    expect(result.parts[0]!.shortMessage.length).toBe(140);
    expect(result.parts[0]!.shortMessage[6]).toBe(('a'.charCodeAt(0) << 1) & 0xff);
  });

  it('by SAR TLVs packed parts carry no UDH and no fill bit; by message_payload the whole text is packed once', () => {
    const text = 'a'.repeat(200);
    const sar = encodeSmppParts(text, 'gsm7', { gsmPacking: true, reference: 300, concatenation: 'sar' });
    if (!sar.ok) throw new Error(sar.error);
    expect(sar.parts.map((p) => [p.esmClass, p.shortMessage.toString('hex'), p.tlvs])).toEqual([
      [0, packSeptets(toGsmSeptets('a'.repeat(153))!.flat()).toString('hex'), { sar_msg_ref_num: 300, sar_total_segments: 2, sar_segment_seqnum: 1 }],
      [0, packSeptets(toGsmSeptets('a'.repeat(47))!.flat()).toString('hex'), { sar_msg_ref_num: 300, sar_total_segments: 2, sar_segment_seqnum: 2 }],
    ]);
    const payload = encodeSmppParts(text, 'gsm7', { gsmPacking: true, reference: 1, concatenation: 'payload' });
    if (!payload.ok) throw new Error(payload.error);
    expect(payload.parts).toEqual([
      { shortMessage: Buffer.alloc(0), esmClass: 0, dataCoding: 0, tlvs: { message_payload: packSeptets(toGsmSeptets(text)!.flat()) } },
    ]);
    // One SMS is one SMS whichever way long ones go.
    const short = encodeSmppParts('hello', 'gsm7', { gsmPacking: false, reference: 1, concatenation: 'payload' });
    expect(short.ok && short.parts).toEqual([{ shortMessage: Buffer.from('hello'), esmClass: 0, dataCoding: 0 }]);
  });

  it.each([
    ['Casino', { ton: 5, npi: 0, addr: 'Casino' }],
    ['+447700900123', { ton: 1, npi: 1, addr: '447700900123' }],
    ['447700900123', { ton: 1, npi: 1, addr: '447700900123' }],
    ['88001', { ton: 0, npi: 1, addr: '88001' }],
    ['TwelveLetter', { error: expect.stringMatching(/11 characters/) }],
  ])('sender %s has TON/NPI %o', (value, expected) => expect(sourceAddress(value)).toEqual(expected));
});
