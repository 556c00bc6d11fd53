/**
 * SMPP facts as data (SMPP 3.4 specification, §5.1.3 command_status, §5.2.28 message_state, Appendix B delivery
 * receipt format): how a submit_sm_resp status classifies, and how a deliver_sm receipt maps to a CRM status.
 * Pure functions with table tests (test/providers/smpp.test.ts).
 */
import type { MappedStatus } from '../types.js';

export type SubmitClass = 'accepted' | 'permanent' | 'transient';

/**
 * submit_sm_resp command_status → class. Every status in a submit_sm_resp means the SMSC refused this submit_sm
 * (it answered, so nothing is uncertain): transient where the same PDU may pass later (throttling, a full queue,
 * the SMSC's own trouble), permanent where the message or account is wrong. Unlisted codes (vendor-specific
 * 0x400–0x4FF and the rest) are permanent: a retry of an unknown refusal is more likely a second refusal.
 */
export const SMPP_SUBMIT_STATUS: ReadonlyMap<number, { name: string; kind: Exclude<SubmitClass, 'accepted'> }> = new Map([
  [0x0001, { name: 'ESME_RINVMSGLEN', kind: 'permanent' }], // message length is invalid
  [0x0002, { name: 'ESME_RINVCMDLEN', kind: 'permanent' }], // the PDU's length is wrong: the same PDU fails again
  // The SMSC takes no such command on this bind (a generic_nack's usual status): its set-up, not this message.
  [0x0003, { name: 'ESME_RINVCMDID', kind: 'transient' }],
  [0x0004, { name: 'ESME_RINVBNDSTS', kind: 'transient' }], // not bound for submitting (the bind is being rebuilt)
  [0x0008, { name: 'ESME_RSYSERR', kind: 'transient' }], // system error at the SMSC
  [0x000a, { name: 'ESME_RINVSRCADR', kind: 'permanent' }], // invalid source address
  [0x000b, { name: 'ESME_RINVDSTADR', kind: 'permanent' }], // invalid destination address
  [0x0014, { name: 'ESME_RMSGQFUL', kind: 'transient' }], // message queue full
  [0x0045, { name: 'ESME_RSUBMITFAIL', kind: 'transient' }], // submit_sm failed (generic, often capacity)
  [0x0048, { name: 'ESME_RINVSRCTON', kind: 'permanent' }],
  [0x0049, { name: 'ESME_RINVSRCNPI', kind: 'permanent' }],
  [0x0050, { name: 'ESME_RINVDSTTON', kind: 'permanent' }],
  [0x0051, { name: 'ESME_RINVDSTNPI', kind: 'permanent' }],
  [0x0058, { name: 'ESME_RTHROTTLED', kind: 'transient' }], // throughput exceeded: slow down
  [0x0061, { name: 'ESME_RINVSCHED', kind: 'permanent' }],
  [0x0062, { name: 'ESME_RINVEXPIRY', kind: 'permanent' }],
  [0x0064, { name: 'ESME_RX_T_APPN', kind: 'transient' }], // temporary application error
  [0x0065, { name: 'ESME_RX_P_APPN', kind: 'permanent' }], // permanent application error
  [0x0066, { name: 'ESME_RX_R_APPN', kind: 'permanent' }], // rejected by the application
  [0x00fe, { name: 'ESME_RDELIVERYFAILURE', kind: 'transient' }], // delivery failure (data_sm; treated as temporary)
  [0x00ff, { name: 'ESME_RUNKNOWNERR', kind: 'transient' }],
  [0x0104, { name: 'ESME_RINVDCS', kind: 'permanent' }], // invalid data_coding
]);

export function classifySubmitStatus(commandStatus: number): { kind: SubmitClass; name: string } {
  if (commandStatus === 0) return { kind: 'accepted', name: 'ESME_ROK' };
  const known = SMPP_SUBMIT_STATUS.get(commandStatus);
  return known ?? { kind: 'permanent', name: `0x${commandStatus.toString(16).padStart(8, '0')}` };
}

/** message_state TLV values (SMPP 3.4 §5.2.28) → CRM status. */
export const SMPP_MESSAGE_STATE: ReadonlyMap<number, { name: string; status: MappedStatus }> = new Map([
  [0, { name: 'SCHEDULED', status: 'intermediate' }], // SMPP 5.0; waiting for its scheduled time
  [1, { name: 'ENROUTE', status: 'intermediate' }],
  [2, { name: 'DELIVERED', status: 'delivered' }],
  [3, { name: 'EXPIRED', status: 'undelivered' }], // validity ran out before the handset was reached
  [4, { name: 'DELETED', status: 'undelivered' }], // removed from the SMSC before delivery
  [5, { name: 'UNDELIVERABLE', status: 'undelivered' }],
  // The spec's ACCEPTED is "read by customer service on the subscriber's behalf"; aggregators use ACCEPTD for
  // "taken by the next hop", which says nothing about the handset yet, so it waits for a final state.
  [6, { name: 'ACCEPTED', status: 'intermediate' }],
  [7, { name: 'UNKNOWN', status: 'delivery_unknown' }],
  [8, { name: 'REJECTED', status: 'failed' }], // refused by the network before delivery was tried
  [9, { name: 'SKIPPED', status: 'failed' }], // SMPP 5.0
]);

/** `stat:` words of the receipt text (SMPP 3.4 Appendix B), the same states in seven letters. */
export const SMPP_RECEIPT_STAT: ReadonlyMap<string, MappedStatus> = new Map([
  ['SCHEDULED', 'intermediate'],
  ['ENROUTE', 'intermediate'],
  ['DELIVRD', 'delivered'],
  ['EXPIRED', 'undelivered'],
  ['DELETED', 'undelivered'],
  ['UNDELIV', 'undelivered'],
  ['ACCEPTD', 'intermediate'],
  ['UNKNOWN', 'delivery_unknown'],
  ['REJECTD', 'failed'],
  ['SKIPPED', 'failed'],
]);

export interface SmppReceipt {
  /** The SMSC's message id, from the TLV (in the submit_sm_resp's form) or the receipt text. */
  messageId: string;
  idFrom: 'receipt_tlv' | 'receipt_text';
  providerStatus: string;
  status: MappedStatus;
  errorCode?: string;
  /** True when the state was not in the tables (mapped to delivery_unknown). */
  unknownState: boolean;
}

/** The fields of a deliver_sm that matter for telling a receipt from a message, already decoded by the smpp package. */
export interface DeliverSmFields {
  esmClass: number;
  /** short_message decoded to text (the receipt text is plain ASCII). */
  text: string;
  receiptedMessageId?: string;
  messageState?: number;
}

/**
 * The message type of a deliver_sm, bits 5–2 of esm_class (SMPP 3.4 §5.2.12), as the plugin treats it. Only the
 * SMSC sets these bits; a subscriber's text arrives with type 0 whatever it says, so the bits, never the words,
 * decide what is a receipt. `receipt`: an SMSC delivery receipt (0x04), an SME delivery acknowledgement (0x08) or an
 * intermediate delivery notification (0x20), each about a message we sent. `message`: a mobile-originated text.
 * `other`: a manual/user acknowledgement (0x10), a conversation abort (0x18) or a reserved value, none of which says
 * anything about delivery or consent.
 */
export const SMPP_DELIVER_TYPE: ReadonlyMap<number, 'message' | 'receipt' | 'other'> = new Map([
  [0x00, 'message'],
  [0x04, 'receipt'],
  [0x08, 'receipt'],
  [0x10, 'other'],
  [0x18, 'other'],
  [0x20, 'receipt'],
]);

export interface DeliverSmOptions {
  /**
   * Take receipt text (`id:… stat:…`) in a deliver_sm whose esm_class does not mark it as a receipt, for an SMSC that
   * leaves the bits at 0 (providers.<name>.receipts_without_esm_class). Off by default: then anyone who can text our
   * number could write a receipt for any message.
   */
  textReceiptsWithoutFlag?: boolean;
}

/** What one deliver_sm is: a receipt for one of our messages, a player's message, or neither. */
export type DeliverSmKind = { kind: 'receipt'; receipt: SmppReceipt } | { kind: 'message' } | { kind: 'ignored'; reason: string };

export function classifyDeliverSm(fields: DeliverSmFields, options: DeliverSmOptions = {}): DeliverSmKind {
  const type = SMPP_DELIVER_TYPE.get(fields.esmClass & 0x3c) ?? 'other';
  if (type === 'other') return { kind: 'ignored', reason: `esm_class 0x${fields.esmClass.toString(16)} is neither a receipt nor a message` };
  if (type === 'receipt') {
    const receipt = parseSmppReceipt(fields);
    return receipt ? { kind: 'receipt', receipt } : { kind: 'ignored', reason: 'a receipt without a message id or a state' };
  }
  if (options.textReceiptsWithoutFlag) {
    const receipt = parseSmppReceipt(fields);
    if (receipt) return { kind: 'receipt', receipt };
  }
  return { kind: 'message' };
}

/**
 * A delivery receipt's id and state, or null when it carries none. The TLVs win when present (they carry the id
 * exactly as the submit_sm_resp did); else the text `id:… stat:… err:…`. Whether the deliver_sm is a receipt at all
 * is classifyDeliverSm's decision, by its esm_class.
 */
export function parseSmppReceipt(fields: DeliverSmFields): SmppReceipt | null {
  const textId = /(?:^|\s)id:(\S+)/i.exec(fields.text)?.[1];
  const textStat = /(?:^|\s)stat:(\S+)/i.exec(fields.text)?.[1]?.toUpperCase();
  const textErr = /(?:^|\s)err:(\S+)/i.exec(fields.text)?.[1];
  const messageId = fields.receiptedMessageId || textId;
  const idFrom = fields.receiptedMessageId ? 'receipt_tlv' : 'receipt_text';
  if (!messageId) return null;

  const errorCode = textErr && !/^0+$/.test(textErr) ? textErr : undefined;
  if (fields.messageState !== undefined) {
    const known = SMPP_MESSAGE_STATE.get(fields.messageState);
    const providerStatus = known?.name ?? `state_${fields.messageState}`;
    return { messageId, idFrom, providerStatus, status: known?.status ?? 'delivery_unknown', unknownState: !known, ...(errorCode ? { errorCode } : {}) };
  }
  if (!textStat) return null;
  const status = SMPP_RECEIPT_STAT.get(textStat);
  return {
    messageId,
    idFrom,
    providerStatus: textStat,
    status: status ?? 'delivery_unknown',
    unknownState: status === undefined,
    ...(errorCode ? { errorCode } : {}),
  };
}

/**
 * How the SMSC writes the id in the receipt text against its submit_sm_resp (Kannel calls this msg-id-type):
 * `same`, or decimal in the receipt for a hex id (`decimal_to_hex`), or hex in the receipt for a decimal id
 * (`hex_to_decimal`). The TLV receipted_message_id is always in the submit_sm_resp's form.
 */
export type ReceiptIdFormat = 'same' | 'decimal_to_hex' | 'hex_to_decimal';

/**
 * The id under which a part is stored and matched: as the submit_sm_resp gave it, with hex ids lowercased so that
 * a receipt's converted id (or an SMSC's change of case) finds it; a receipt text id converted to that form.
 * An id the format does not fit (not digits for decimal_to_hex) is kept as it is and simply matches nothing.
 */
export function canonicalMessageId(id: string, from: 'submit' | 'receipt_text' | 'receipt_tlv', format: ReceiptIdFormat): string {
  if (format === 'same') return id;
  if (format === 'decimal_to_hex') {
    if (from !== 'receipt_text') return id.toLowerCase();
    return /^\d{1,40}$/.test(id) ? BigInt(id).toString(16) : id;
  }
  if (from !== 'receipt_text') return id;
  return /^[0-9a-f]{1,32}$/i.test(id) ? BigInt(`0x${id}`).toString(10) : id;
}
