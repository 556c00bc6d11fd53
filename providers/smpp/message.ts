/**
 * What one message becomes on an SMPP bind (SMPP 3.4 §5.2.19, §5.2.5; GSM 03.38 / 3GPP TS 23.038 for the
 * alphabet and 3GPP TS 23.040 §9.2.3.24.1 for the concatenation header). Pure functions, no I/O.
 *
 * - GSM-7 goes as data_coding 0, one septet per octet by default (what most SMSCs expect on SMPP), or packed 7-bit
 *   when the provider's `gsm_packing` says the SMSC wants that. UCS-2 goes as data_coding 8, UTF-16 big-endian.
 * - A message over one SMS becomes parts of 153 septets (GSM-7) or 67 code units (UCS-2), each carrying a 6-octet
 *   UDH (IEI 0x00: 8-bit reference, total, sequence) and sent as its own submit_sm with esm_class UDHI (0x40).
 *   An escape pair and a surrogate pair are never split, so the part count is the one src/sms/encoding.ts counted.
 *   SMPP 3.4 offers two other ways for an SMSC that wants them (§5.3.2.22–24, §5.3.2.32): the same parts without a
 *   UDH, tied by the sar_msg_ref_num / sar_total_segments / sar_segment_seqnum TLVs (the SMSC writes the header),
 *   or the whole text in one submit_sm as the message_payload TLV with an empty short_message (the SMSC splits).
 */

/** GSM 03.38 default alphabet, by septet value. */
const GSM_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' + '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
/** GSM 03.38 extension table: the character and the septet that follows the escape (0x1B). */
const GSM_EXTENSION: ReadonlyArray<readonly [string, number]> = [
  ['\f', 0x0a],
  ['^', 0x14],
  ['{', 0x28],
  ['}', 0x29],
  ['\\', 0x2f],
  ['[', 0x3c],
  ['~', 0x3d],
  [']', 0x3e],
  ['|', 0x40],
  ['€', 0x65],
];
const BASIC = new Map([...GSM_BASIC].map((ch, septet) => [ch, septet]));
const EXTENDED = new Map(GSM_EXTENSION);
const ESCAPE = 0x1b;

/** Septets for `text`, each character as one septet or an escape pair; null when a character is not GSM-7. */
export function toGsmSeptets(text: string): number[][] | null {
  const chars: number[][] = [];
  for (const ch of text) {
    if (ch === '\u001b') return null; // the escape itself is not a character a message may carry
    const basic = BASIC.get(ch);
    if (basic !== undefined) chars.push([basic]);
    else if (EXTENDED.has(ch)) chars.push([ESCAPE, EXTENDED.get(ch)!]);
    else return null;
  }
  return chars;
}

/** Septets packed 7 bits at a time, LSB first, starting `fillBits` into the first octet (after a UDH). */
export function packSeptets(septets: readonly number[], fillBits = 0): Buffer {
  const out = Buffer.alloc(Math.ceil((fillBits + septets.length * 7) / 8));
  septets.forEach((septet, i) => {
    const bit = fillBits + i * 7;
    const octet = bit >> 3;
    const shift = bit & 7;
    out[octet]! |= (septet << shift) & 0xff;
    if (shift > 1) out[octet + 1]! |= septet >> (8 - shift);
  });
  return out;
}

/** UTF-16 code units, grouped so a surrogate pair stays one unit of splitting. */
function toUcs2Units(text: string): number[][] {
  return [...text].map((ch) => (ch.length === 2 ? [ch.charCodeAt(0), ch.charCodeAt(1)] : [ch.charCodeAt(0)]));
}

/** Groups whole characters into parts of at most `size` units each. */
function splitWhole(chars: readonly number[][], size: number): number[][] {
  const parts: number[][] = [[]];
  for (const ch of chars) {
    if (parts.at(-1)!.length + ch.length > size) parts.push([]);
    parts.at(-1)!.push(...ch);
  }
  return parts;
}

export interface SmppPart {
  /** short_message octets, UDH included for a part of a concatenated message sent by UDH. */
  shortMessage: Buffer;
  /** esm_class: 0x40 (UDH indicator) for a part of a concatenated message sent by UDH, else 0. */
  esmClass: number;
  dataCoding: 0 | 8;
  /** The optional parameters that carry a long message when it does not go by UDH. */
  tlvs?: { sar_msg_ref_num: number; sar_total_segments: number; sar_segment_seqnum: number } | { message_payload: Buffer };
}

/** How a message longer than one SMS travels: UDH in each part, SAR TLVs on each part, or one message_payload. */
export type SmppConcatenation = 'udh' | 'sar' | 'payload';

export type SmppEncodeResult = { ok: true; parts: SmppPart[] } | { ok: false; error: string };

/** The submit_sm payloads for one message; `reference` (0–255) ties its parts together on the handset. */
export function encodeSmppParts(
  text: string,
  encoding: 'gsm7' | 'ucs2',
  options: { gsmPacking: boolean; reference: number; concatenation?: SmppConcatenation },
): SmppEncodeResult {
  const result = encodeUdhParts(text, encoding, options);
  const how = options.concatenation ?? 'udh';
  if (!result.ok || result.parts.length === 1 || how === 'udh') return result;
  const bodies = result.parts.map((p) => p.shortMessage.subarray(6));
  if (how === 'payload') {
    // One submit_sm: the SMSC splits. Packed GSM-7 is packed over the whole text, without the fill bit a UDH needs.
    const whole = encoding === 'gsm7' && options.gsmPacking ? packSeptets((toGsmSeptets(text) ?? []).flat()) : Buffer.concat(bodies);
    return { ok: true, parts: [{ shortMessage: Buffer.alloc(0), esmClass: 0, dataCoding: result.parts[0]!.dataCoding, tlvs: { message_payload: whole } }] };
  }
  // SAR: the parts as split for a UDH (the SMSC adds one), each without it and without the fill bit.
  const septetGroups = encoding === 'gsm7' && options.gsmPacking ? splitWhole(toGsmSeptets(text) ?? [], 153) : undefined;
  return {
    ok: true,
    parts: result.parts.map((p, i) => ({
      shortMessage: septetGroups ? packSeptets(septetGroups[i]!) : bodies[i]!,
      esmClass: 0,
      dataCoding: p.dataCoding,
      // A 16-bit reference: the 8-bit one of the UDH parts, so both ways number a message alike.
      tlvs: { sar_msg_ref_num: options.reference & 0xffff, sar_total_segments: result.parts.length, sar_segment_seqnum: i + 1 },
    })),
  };
}

function encodeUdhParts(text: string, encoding: 'gsm7' | 'ucs2', options: { gsmPacking: boolean; reference: number }): SmppEncodeResult {
  const UDH_OCTETS = 6;
  if (encoding === 'gsm7') {
    const chars = toGsmSeptets(text);
    if (!chars) return { ok: false, error: 'text has characters outside GSM-7 but was planned as gsm7' };
    const total = chars.reduce((n, c) => n + c.length, 0);
    const groups = total <= 160 ? [chars.flat()] : splitWhole(chars, 153);
    const multi = groups.length > 1;
    // Packed septets after a UDH start on a septet boundary: 48 header bits need 1 fill bit (TS 23.040 §9.2.3.24).
    const fill = multi ? (7 - ((UDH_OCTETS * 8) % 7)) % 7 : 0;
    return {
      ok: true,
      parts: groups.map((septets, i) => {
        const body = options.gsmPacking ? packSeptets(septets, fill) : Buffer.from(septets);
        return part(body, multi ? udh(options.reference, groups.length, i + 1) : undefined, 0);
      }),
    };
  }
  const units = toUcs2Units(text);
  const total = units.reduce((n, c) => n + c.length, 0);
  const groups = total <= 70 ? [units.flat()] : splitWhole(units, 67);
  const multi = groups.length > 1;
  return {
    ok: true,
    parts: groups.map((codeUnits, i) => {
      const body = Buffer.alloc(codeUnits.length * 2);
      codeUnits.forEach((unit, k) => body.writeUInt16BE(unit, k * 2));
      return part(body, multi ? udh(options.reference, groups.length, i + 1) : undefined, 8);
    }),
  };
}

function udh(reference: number, total: number, sequence: number): Buffer {
  // UDHL 5, IEI 0x00 (concatenated SM, 8-bit reference), IEDL 3, reference, total, sequence.
  return Buffer.from([0x05, 0x00, 0x03, reference & 0xff, total, sequence]);
}

function part(body: Buffer, header: Buffer | undefined, dataCoding: 0 | 8): SmppPart {
  return { shortMessage: header ? Buffer.concat([header, body]) : body, esmClass: header ? 0x40 : 0, dataCoding };
}

export interface SmppAddress {
  ton: number;
  npi: number;
  addr: string;
}

/**
 * TON/NPI of a source address from its value (SMPP 3.4 §5.2.5, §5.2.6): letters make an alphanumeric sender
 * (TON 5, NPI 0, at most 11 characters on the handset); `+` and digits an international number (TON 1, NPI 1
 * E.164, sent without the `+`); a short code of up to 8 digits goes as TON 0 NPI 1 (unknown: the SMSC decides).
 */
export function sourceAddress(value: string): SmppAddress | { error: string } {
  if (/^\+\d{6,15}$/.test(value) || /^\d{9,15}$/.test(value)) return { ton: 1, npi: 1, addr: value.replace(/^\+/, '') };
  if (/^\d{1,8}$/.test(value)) return { ton: 0, npi: 1, addr: value };
  if (value.length > 11) return { error: `sender ${JSON.stringify(value)} is longer than the 11 characters of an alphanumeric sender` };
  if (!/^[\x20-\x7e]+$/.test(value)) return { error: `sender ${JSON.stringify(value)} has characters an alphanumeric sender cannot carry` };
  return { ton: 5, npi: 0, addr: value };
}

/** The recipient, E.164 with `+` (src/kit/phone-number.ts), as TON 1 NPI 1 without the `+`. */
export function destinationAddress(e164: string): SmppAddress {
  return { ton: 1, npi: 1, addr: e164.replace(/^\+/, '') };
}

/**
 * A mobile-originated message's source_addr as the number players are stored under: E.164 with `+` when the SMSC
 * marks it international (TON 1), or sends it with unknown TON (0) as 9 to 15 digits, as SMSCs commonly write full
 * international numbers; anything else (national or alphanumeric) is kept as received and matches no player.
 */
export function inboundSourceNumber(addr: string, ton: number): string {
  const digits = addr.replace(/^\+/, '');
  if (/^\d{6,15}$/.test(digits) && (ton === 1 || (ton === 0 && digits.length >= 9))) return `+${digits}`;
  return addr;
}
