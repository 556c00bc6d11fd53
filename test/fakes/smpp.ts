/**
 * A fake SMSC built on the `smpp` package's server side (the same package the plugin uses as its client), speaking
 * real SMPP 3.4 PDUs over TCP: bind_transceiver with credentials (or refused), enquire_link, submit_sm answered
 * with a message id or a chosen command_status, answers held back to see the client's window, delivery receipts
 * as deliver_sm (receipt text, or TLVs) after or before the submit_sm_resp, and dropped connections.
 */
import type { AddressInfo } from 'node:net';
import smpp from 'smpp';

export interface SmppSubmit {
  sourceTon: number;
  sourceNpi: number;
  source: string;
  destTon: number;
  destNpi: number;
  destination: string;
  esmClass: number;
  dataCoding: number;
  registeredDelivery: number;
  /** The concatenation header as received (UDHL first), when esm_class carried the UDH indicator. */
  udh?: Buffer;
  /** short_message decoded by the package as its data_coding says (GSM-7 one septet per octet, or UCS-2). */
  text: string;
  /** The id answered, when accepted. */
  messageId?: string;
  /** validity_period as the package decodes it (a relative time from now), in epoch ms; absent when not given. */
  validUntil?: number;
}

export interface SmppFakeOptions {
  systemId?: string;
  password?: string;
  /** Receipts for each accepted submit_sm: none, after the submit_sm_resp, or before it. */
  receipts?: 'none' | 'after' | 'before';
  /** The receipt's state word (default DELIVRD) and whether it travels as TLVs instead of text. */
  receiptStat?: string;
  /** State words for the next receipts, first in first used, before falling back to receiptStat. */
  receiptStats?: string[];
  receiptAs?: 'text' | 'tlv';
  /** Write the receipt text's id in decimal while submit_sm_resp ids are hex, as some SMSCs do. */
  decimalReceiptIds?: boolean;
  /** Serve SMPP over TLS with this key and certificate (PEM). */
  tls?: { key: string; cert: string };
  port?: number;
  /** The message_id of the first accepted submit_sm, counted up from there (default 0x10000). */
  firstMessageId?: number;
}

export interface SmppFake {
  host: string;
  port: number;
  systemId: string;
  password: string;
  options: SmppFakeOptions;
  /** bind_transceiver attempts: whether each was accepted. */
  binds: Array<{ systemId: string; systemType: string; accepted: boolean }>;
  submits: SmppSubmit[];
  /** deliver_sm_resp command_status for each receipt sent, in answer order. */
  receiptAnswers: number[];
  enquireLinks: number;
  unbinds: number;
  /** generic_nack PDUs received (answers to commands the client does not know). */
  genericNacks: number;
  /** TLS handshakes that failed (with `tls`). */
  tlsFailures: number;
  /** Most submit_sm seen without an answer at one time. */
  maxOutstanding: number;
  /** Submit_sm currently without an answer. */
  outstanding(): number;
  /** Refuse binds from now on (true) or accept them again. */
  refuseBinds: boolean;
  /** Leave enquire_link unanswered (false), as a half-dead connection would. */
  answerEnquireLinks: boolean;
  /** Hold every submit_sm_resp until release() (true), to watch the client's window. */
  hold: boolean;
  release(): void;
  /** command_status for the next submit_sm (first in, first used), e.g. ESME_RTHROTTLED. */
  nextStatuses: number[];
  /**
   * Sends a receipt for `messageId` on every bound session, or (`via: 'other'`) only on those other than the one
   * the message came in on, as an SMSC serving several binds of one account may.
   */
  sendReceipt(messageId: string, stat?: string, as?: 'text' | 'tlv', via?: 'all' | 'other'): Promise<void>;
  /** Sends a deliver_sm with these fields on every bound session; resolves with the client's command_status. */
  sendDeliverSm(fields: Record<string, unknown>): Promise<number[]>;
  /** Writes raw bytes to every bound session (malformed PDUs). */
  sendRaw(bytes: Buffer): void;
  /** Drops every client connection as an SMSC restart would. */
  dropConnections(): void;
  /**
   * Sessions bound and known to be bound on the client's side too: after answering a bind the fake sends an
   * enquire_link, and a client that answered it has read the bind_transceiver_resp before (PDUs arrive in order).
   */
  boundSessions(): number;
  close(): Promise<void>;
}

/** Destinations the fake always refuses, with the submit_sm_resp status it answers (this fake's own numbers). */
export const SMPP_MAGIC_DESTINATIONS: ReadonlyMap<string, number> = new Map([
  ['447700909911', 0x0b], // ESME_RINVDSTADR
  ['447700909958', 0x58], // ESME_RTHROTTLED
  ['447700909920', 0x14], // ESME_RMSGQFUL
]);

const STATE_BY_STAT = new Map([
  ['ENROUTE', 1],
  ['DELIVRD', 2],
  ['EXPIRED', 3],
  ['DELETED', 4],
  ['UNDELIV', 5],
  ['ACCEPTD', 6],
  ['UNKNOWN', 7],
  ['REJECTD', 8],
]);

export async function startSmppFake(options: SmppFakeOptions = {}): Promise<SmppFake> {
  const systemId = options.systemId ?? 'gateway';
  const password = options.password ?? 'secret';
  const bound = new Set<smpp.Session>();
  const confirmed = new Set<smpp.Session>();
  const origin = new Map<string, smpp.Session>();
  const held: Array<() => void> = [];
  let outstanding = 0;
  let nextId = options.firstMessageId ?? 0x10000;

  function receiptPdu(messageId: string, stat: string, as: 'text' | 'tlv'): Record<string, unknown> {
    const base = { source_addr: '447700900123', destination_addr: 'Casino', esm_class: 0x04 };
    if (as === 'tlv') return { ...base, short_message: '', receipted_message_id: messageId, message_state: STATE_BY_STAT.get(stat) ?? 7 };
    const err = stat === 'DELIVRD' ? '000' : '001';
    const textId = options.decimalReceiptIds ? BigInt(`0x${messageId}`).toString(10) : messageId;
    return { ...base, short_message: `id:${textId} sub:001 dlvrd:001 submit date:2611240400 done date:2611240400 stat:${stat} err:${err} text:` };
  }

  function deliver(session: smpp.Session, messageId: string, stat: string, as: 'text' | 'tlv'): Promise<void> {
    return new Promise((resolve) => {
      const sent = session.deliver_sm(receiptPdu(messageId, stat, as), (resp) => {
        fake.receiptAnswers.push(resp.command_status);
        resolve();
      });
      if (!sent) resolve();
    });
  }

  function onSubmit(session: smpp.Session, pdu: smpp.PDU): void {
    const status = fake.nextStatuses.shift() ?? SMPP_MAGIC_DESTINATIONS.get(String(pdu.destination_addr)) ?? 0;
    const messageId = status === 0 ? (nextId++).toString(16) : undefined;
    if (messageId) origin.set(messageId, session);
    const message = pdu.short_message as { message?: Buffer | string; udh?: Buffer[] } | undefined;
    const udh = message?.udh?.length ? Buffer.concat(message.udh) : undefined;
    fake.submits.push({
      sourceTon: Number(pdu.source_addr_ton),
      sourceNpi: Number(pdu.source_addr_npi),
      source: String(pdu.source_addr),
      destTon: Number(pdu.dest_addr_ton),
      destNpi: Number(pdu.dest_addr_npi),
      destination: String(pdu.destination_addr),
      esmClass: Number(pdu.esm_class),
      dataCoding: Number(pdu.data_coding),
      registeredDelivery: Number(pdu.registered_delivery),
      ...(udh ? { udh: Buffer.concat([Buffer.from([udh.length]), udh]) } : {}),
      text: typeof message?.message === 'string' ? message.message : String(message?.message ?? ''),
      ...(messageId ? { messageId } : {}),
      ...(pdu.validity_period instanceof Date ? { validUntil: pdu.validity_period.getTime() } : {}),
    });
    outstanding++;
    fake.maxOutstanding = Math.max(fake.maxOutstanding, outstanding);
    const stat = (messageId && options.receipts !== 'none' ? options.receiptStats?.shift() : undefined) ?? options.receiptStat ?? 'DELIVRD';
    const as = options.receiptAs ?? 'text';
    const answer = async () => {
      if (messageId && options.receipts === 'before') await deliver(session, messageId, stat, as);
      outstanding--;
      session.send(pdu.response(status === 0 ? { message_id: messageId } : { command_status: status }));
      if (messageId && options.receipts === 'after') void deliver(session, messageId, stat, as);
    };
    if (fake.hold) held.push(() => void answer());
    else void answer();
  }

  const server = smpp.createServer(options.tls ? { ...options.tls } : {}, (session) => {
    session.on('error', () => session.destroy());
    session.on('close', () => {
      bound.delete(session);
      confirmed.delete(session);
    });
    session.on('pdu', (pdu: smpp.PDU) => {
      switch (pdu.command) {
        case 'bind_transceiver': {
          const accepted = !fake.refuseBinds && pdu.system_id === systemId && pdu.password === password;
          fake.binds.push({ systemId: String(pdu.system_id), systemType: String(pdu.system_type), accepted });
          session.send(pdu.response(accepted ? { system_id: 'fakesmsc' } : { command_status: smpp.errors.ESME_RBINDFAIL }));
          if (!accepted) return;
          bound.add(session);
          return void session.enquire_link({}, () => bound.has(session) && confirmed.add(session));
        }
        case 'enquire_link':
          fake.enquireLinks++;
          if (fake.answerEnquireLinks) session.send(pdu.response());
          return;
        case 'unbind':
          fake.unbinds++;
          bound.delete(session);
          confirmed.delete(session);
          session.send(pdu.response());
          return void session.close();
        case 'submit_sm':
          if (!bound.has(session)) return void session.send(pdu.response({ command_status: smpp.errors.ESME_RINVBNDSTS }));
          return onSubmit(session, pdu);
        case 'generic_nack':
          fake.genericNacks++;
          return;
        default:
          if (!pdu.isResponse()) session.send(pdu.response({ command_status: smpp.errors.ESME_RINVCMDID }));
      }
    });
  });
  server.on('tlsClientError', () => fake.tlsFailures++);
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const fake: SmppFake = {
    host: '127.0.0.1',
    port,
    systemId,
    password,
    options,
    binds: [],
    submits: [],
    receiptAnswers: [],
    enquireLinks: 0,
    unbinds: 0,
    tlsFailures: 0,
    genericNacks: 0,
    maxOutstanding: 0,
    outstanding: () => outstanding,
    refuseBinds: false,
    answerEnquireLinks: true,
    hold: false,
    release() {
      fake.hold = false;
      for (const answer of held.splice(0)) answer();
    },
    nextStatuses: [],
    async sendReceipt(messageId, stat = 'DELIVRD', as = 'text', via = 'all') {
      const sessions = [...confirmed].filter((s) => via === 'all' || s !== origin.get(messageId));
      await Promise.all(sessions.map((s) => deliver(s, messageId, stat, as)));
    },
    sendDeliverSm(fields) {
      return Promise.all(
        [...confirmed].map((s) => new Promise<number>((resolve) => s.deliver_sm(fields, (resp) => resolve(resp.command_status)) || resolve(-1))),
      );
    },
    sendRaw(bytes) {
      for (const s of confirmed) s.socket.write(bytes);
    },
    dropConnections() {
      held.splice(0);
      outstanding = 0;
      for (const s of server.sessions) s.destroy();
    },
    boundSessions: () => confirmed.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of server.sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
  return fake;
}
