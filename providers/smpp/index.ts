/**
 * SMPP 3.4 (the protocol aggregators, Kannel and Jasmin speak), over the `smpp` npm package. Protocol facts from
 * the SMPP 3.4 specification (SMPP Developers Forum, 1999); the bind itself is in bind.ts, the message layout
 * in message.ts and the status tables in status.ts.
 *
 * Send: one submit_sm per SMS part (a long message by UDH, SAR TLVs or one message_payload, as `long_messages` says;
 * docs/providers.md §8.5), registered_delivery 1, within a
 * window of `window` outstanding submit_sm; `rate_per_second` (segments) is applied outside the plugin like for
 * every provider (src/provider-wrappers/throttle.ts). A bind that is down answers at once, transient and nothing sent.
 * Receipts: deliver_sm on the same bind whose esm_class marks it as a receipt (status.ts classifyDeliverSm),
 * correlated by the SMSC's message id of each part (the SMSC echoes nothing of ours), handed to the gateway's
 * receipt intake through `deps.deliverReceipts` and acknowledged once stored. Any other deliver_sm with a normal
 * message type is a player's text (mobile-originated): it goes to the inbound handling through
 * `deps.deliverInbound`, so STOP and START work over SMPP as they do at /mo/{name}.
 * With several gateway instances each holds its own bind; a receipt may arrive on any of them and is matched in
 * the shared ledger. Secrets to keep out of logs: password.
 */
import { smppRelativeTime, validityLeft } from '../kit/validity.js';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type smppLib from 'smpp';
import { durationSchema } from '../../src/kit/duration.js';
import { openSmppBind, type SubmitOutcome } from './bind.js';
import { destinationAddress, encodeSmppParts, inboundSourceNumber, sourceAddress } from './message.js';
import { canonicalMessageId, classifyDeliverSm, classifySubmitStatus, type ReceiptIdFormat } from './status.js';
import { providerCommonConfig, sendFailure, type ProviderPlugin, type ReceiptEvent, type SendRequest, type SendResult } from '../types.js';

const duration = (fallback: string) => durationSchema(fallback, { positive: true });

const configSchema = z.strictObject({
  type: z.literal('smpp'),
  ...providerCommonConfig,
  host: z.string().min(1).describe('The SMSC.'),
  port: z.number().int().min(1).max(65_535).default(2775).describe("The SMSC's port."),
  tls: z
    .union([
      z.boolean(),
      z.strictObject({
        servername: z.string().optional().describe('The name the certificate must carry; unset: host.'),
        ca: z.string().optional().describe('The CA certificates (PEM) to check against instead of the system ones.'),
        reject_unauthorized: z.boolean().default(true).describe('Refuse a certificate that does not check.'),
      }),
    ])
    .default(false)
    .describe("SMPP over TLS: `true` checks the SMSC's certificate against the system CAs, or `{servername, ca, reject_unauthorized}`."),
  // Field limits of bind_transceiver (SMPP 3.4 §4.1.5): C-octet strings of 16, 9 and 13 octets with their NUL.
  system_id: z.string().min(1).max(15).describe("The bind's system_id."),
  password: z.string().max(8).describe("The bind's password."),
  system_type: z.string().max(12).default('').describe("The bind's system_type."),
  service_type: z.string().max(5).default('').describe("service_type of each submit_sm (SMPP 3.4 §5.2.11); empty: the SMSC's default."),
  from: z.string().min(1).optional().describe('The sender when the CRM gives no sender_name.'),
  window: z
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(10)
    .describe('submit_sm sent and not yet answered, at most; more wait (within sms.single_wait or the batch deadline).'),
  enquire_link: duration('30s').describe('Keep-alive interval of the bind.'),
  response_timeout: duration('10s').describe('How long a bind, submit_sm or enquire_link waits for its answer.'),
  rebind_min: duration('1s').describe('First back-off between bind attempts.'),
  rebind_max: duration('60s').describe('Longest back-off between bind attempts.'),
  long_messages: z
    .enum(['udh', 'sar', 'payload'])
    .default('udh')
    .describe(
      'How a message longer than one SMS goes (SMPP 3.4): `udh` a concatenation header in each part, `sar` the sar_* TLVs on each part (the SMSC writes the header), `payload` the whole text in one submit_sm as message_payload (the SMSC splits).',
    ),
  gsm_packing: z.boolean().default(false).describe('GSM-7 packed 7 bits per character; by default one character per octet, as most SMSCs expect.'),
  receipt_id_format: z
    .enum(['same', 'decimal_to_hex', 'hex_to_decimal'])
    .default('same')
    .describe(
      "How the receipt text writes the message id against the submit_sm_resp (status.ts canonicalMessageId): `decimal_to_hex` is decimal in receipts and hex ids (Kannel's msg-id-type).",
    ),
  receipts_without_esm_class: z
    .boolean()
    .default(false)
    .describe(
      "Also read receipt text (`id:… stat:…`) in a deliver_sm not flagged as a receipt, for an SMSC that never sets the flag. Off: such text is a player's message, since anyone who texts our number can write it (docs/trust.md).",
    ),
  max_parked_receipts: z
    .number()
    .int()
    .min(1)
    .max(10_000_000)
    .default(10_000)
    .describe(
      "This provider's receipts left parked (no message known for their id) at most; past it the oldest are set aside and counted in sms_gateway_parked_receipts_dropped_total. Checked each time an instance has parked a tenth of it, so the pile may pass it by that much.",
    ),
});
export type SmppConfig = z.infer<typeof configSchema>;

type PartOutcome =
  | { kind: 'accepted'; messageId: string }
  | { kind: 'refused'; class: 'permanent' | 'transient'; status: string }
  | Exclude<SubmitOutcome, { kind: 'answered' }>;

/** What the SMSC's answer (or its absence) to one submit_sm means. */
export function readPartOutcome(outcome: SubmitOutcome, idFormat: ReceiptIdFormat = 'same'): PartOutcome {
  if (outcome.kind !== 'answered') return outcome;
  // A generic_nack in place of the submit_sm_resp (SMPP 3.4 §4.3): the SMSC could not take the PDU at all, whatever
  // its command_status says; one claiming success carries no message id either.
  if (outcome.pdu.command === 'generic_nack') {
    const nack = classifySubmitStatus(outcome.pdu.command_status || 0xff);
    return { kind: 'refused', class: nack.kind === 'accepted' ? 'transient' : nack.kind, status: `generic_nack:${nack.name}` };
  }
  const verdict = classifySubmitStatus(outcome.pdu.command_status);
  if (verdict.kind !== 'accepted') return { kind: 'refused', class: verdict.kind, status: verdict.name };
  const id = outcome.pdu.message_id;
  // Accepted without an id: the message goes out, but its receipts can never be matched.
  if (typeof id !== 'string' || id === '') return { kind: 'lost', reason: 'submit_sm_resp without a message_id', code: 'malformed_answer' };
  return { kind: 'accepted', messageId: canonicalMessageId(id, 'submit', idFormat) };
}

/**
 * One answer for a message from its parts' outcomes, in precedence order:
 * all accepted → sent; some accepted → permanent (the accepted parts go out, so a retry would send them twice,
 * as for Vonage's mixed answers); a part lost after it went out → transient and ambiguous (uncertain); a part
 * refused for good → permanent; else nothing was sent → transient.
 */
export function combinePartOutcomes(parts: readonly PartOutcome[]): SendResult {
  const fail = (kind: 'permanent' | 'transient', error: string, code: string, ambiguous = false) => sendFailure('smpp', kind, error, code, ambiguous);
  const accepted = parts.flatMap((p) => (p.kind === 'accepted' ? [p.messageId] : []));
  if (parts.length > 0 && accepted.length === parts.length) return { ok: true, providerMessageIds: accepted, providerStatus: 'ESME_ROK' };
  const first = parts.find((p): p is Exclude<PartOutcome, { kind: 'accepted' }> => p.kind !== 'accepted');
  if (!first) return fail('transient', 'no parts to send', 'no_parts');
  const describe = (p: Exclude<PartOutcome, { kind: 'accepted' }>) => (p.kind === 'refused' ? `refused with ${p.status}` : p.reason);
  if (accepted.length > 0)
    return fail('permanent', `${accepted.length} of ${parts.length} parts were accepted and will be sent; another was ${describe(first)}`, 'partially_sent');
  const lost = parts.find((p) => p.kind === 'lost');
  if (lost && lost.kind === 'lost') return fail('transient', lost.reason, lost.code, true);
  const permanent = parts.find((p) => p.kind === 'refused' && p.class === 'permanent');
  if (permanent && permanent.kind === 'refused') return fail('permanent', `submit_sm refused with ${permanent.status}`, permanent.status);
  if (first.kind === 'refused') return fail('transient', `submit_sm refused with ${first.status}; nothing was sent`, first.status);
  return fail('transient', `not sent: ${first.reason}`, first.code);
}

/** Some parts accepted and others refused for now: worth offering those again rather than failing half a message. */
export function needsPartRetry(parts: readonly PartOutcome[]): boolean {
  return parts.some((p) => p.kind === 'accepted') && parts.some((p) => p.kind === 'refused' && p.class === 'transient');
}

/**
 * An AbortSignal for the window wait: the send's own bound, the gateway stopping, or the request's deadline.
 * dispose() unhooks it from the long-lived parents (AbortSignal.any would keep a listener per send on them).
 */
function waitLimit(req: SendRequest, signal: AbortSignal, now: number): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const fire = () => controller.abort();
  const parents = [signal, ...(req.waitSignal ? [req.waitSignal] : [])];
  for (const parent of parents) {
    if (parent.aborted) fire();
    else parent.addEventListener('abort', fire, { once: true });
  }
  const timer = req.deadline === undefined ? undefined : setTimeout(fire, Math.max(0, req.deadline - now));
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      for (const parent of parents) parent.removeEventListener('abort', fire);
    },
  };
}

/** A short_message or message_payload as the smpp package decodes it by data_coding: `{ message: string }`. */
function decodedText(field: unknown): string {
  const message = (field as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : '';
}

export const smpp: ProviderPlugin<typeof configSchema> = {
  type: 'smpp',
  configSchema,
  create(name, config: SmppConfig, deps) {
    let reference = Math.floor(Math.random() * 256);

    async function onDeliverSm(pdu: smppLib.PDU): Promise<number> {
      // The text travels in short_message, or (a long text) in the message_payload TLV with short_message empty.
      const text = decodedText(pdu.short_message) || decodedText(pdu.message_payload);
      const kind = classifyDeliverSm(
        {
          esmClass: Number(pdu.esm_class ?? 0),
          text,
          receiptedMessageId: typeof pdu.receipted_message_id === 'string' ? pdu.receipted_message_id : undefined,
          messageState: typeof pdu.message_state === 'number' ? pdu.message_state : undefined,
        },
        { textReceiptsWithoutFlag: config.receipts_without_esm_class },
      );
      if (kind.kind === 'ignored') {
        // Acknowledged so the SMSC stops offering it; nothing in it is about a message of ours or a player's consent.
        deps.logger.info({ provider: name, reason: kind.reason }, 'deliver_sm acknowledged and dropped');
        return 0;
      }
      if (kind.kind === 'message') return receiveMessage(pdu, text);
      const receipt = kind.receipt;
      if (receipt.unknownState)
        deps.logger.warn({ provider: name, providerStatus: receipt.providerStatus }, 'unknown SMPP receipt state; mapped to delivery_unknown');
      if (!deps.deliverReceipts) throw new Error('this process takes in no receipts');
      // No signature to check: the receipt came over the bind we opened to the configured SMSC and authenticated
      // with system_id/password, so the connection vouches for the SMSC; the esm_class bits, which only the SMSC
      // sets, vouch that it is the SMSC's receipt and not a subscriber's text.
      const event: ReceiptEvent = {
        providerMessageId: canonicalMessageId(receipt.messageId, receipt.idFrom, config.receipt_id_format),
        providerStatus: receipt.providerStatus,
        status: receipt.status,
        ...(receipt.errorCode ? { errorCode: receipt.errorCode } : {}),
        // One receipt per submit_sm, so a long message's parts are rolled up (src/delivery/parts.ts).
        perPart: true,
      };
      await deps.deliverReceipts([event], { maxParked: config.max_parked_receipts });
      return 0;
    }

    /** A player's text: kept and checked for STOP/START like one posted to /mo/{name}; acknowledged once committed. */
    async function receiveMessage(pdu: smppLib.PDU, text: string): Promise<number> {
      if (!deps.deliverInbound) throw new Error('this process does not take inbound messages');
      await deps.deliverInbound({
        // SMPP gives a mobile-originated message no id of its own; an SMSC that offers it again after a lost
        // deliver_sm_resp makes a second row, and a repeated STOP changes nothing (src/ledger/consent-changes.ts).
        providerMessageId: `smpp-${randomUUID()}`,
        from: inboundSourceNumber(String(pdu.source_addr ?? ''), Number(pdu.source_addr_ton ?? 0)),
        to: String(pdu.destination_addr ?? ''),
        text,
      });
      return 0;
    }

    const bind = openSmppBind(
      {
        host: config.host,
        port: config.port,
        tls:
          config.tls === false
            ? false
            : config.tls === true
              ? { rejectUnauthorized: true }
              : { servername: config.tls.servername, ca: config.tls.ca, rejectUnauthorized: config.tls.reject_unauthorized },
        systemId: config.system_id,
        password: config.password,
        systemType: config.system_type,
        window: config.window,
        enquireLinkMs: config.enquire_link,
        responseTimeoutMs: config.response_timeout,
        rebindMinMs: config.rebind_min,
        rebindMaxMs: config.rebind_max,
      },
      { onDeliverSm, logger: deps.logger },
    );

    return {
      name,
      type: 'smpp',
      async send(req: SendRequest, signal: AbortSignal): Promise<SendResult> {
        if (!bind.bound) return sendFailure('smpp', 'transient', 'not sent: the bind to the SMSC is down', 'bind_down');
        const fromValue = req.from ?? config.from;
        if (!fromValue) return sendFailure('smpp', 'permanent', 'no sender: the message has no sender_name and the provider has no `from`', 'no_sender');
        const source = sourceAddress(fromValue);
        if ('error' in source) return sendFailure('smpp', 'permanent', source.error, 'invalid_sender');
        const encoded = encodeSmppParts(req.text, req.encoding, { gsmPacking: config.gsm_packing, reference, concatenation: config.long_messages });
        if (!encoded.ok) return sendFailure('smpp', 'permanent', encoded.error, 'encoding');
        if (encoded.parts.length > 1 || encoded.parts[0]?.tlvs) reference = (reference + 1) & 0xff;
        const destination = destinationAddress(req.to);
        const limit = waitLimit(req, signal, deps.now());
        // Any number of seconds the SMSC may keep it, up to 99 days (the relative form's field).
        const validity = validityLeft(req.validUntil, deps.now(), { minMs: 1_000, maxMs: 99 * 86_400_000 });
        try {
          const submitPart = async (part: (typeof encoded.parts)[number]) => {
            const outcome = await bind.submit(
              {
                service_type: config.service_type,
                source_addr_ton: source.ton,
                source_addr_npi: source.npi,
                source_addr: source.addr,
                dest_addr_ton: destination.ton,
                dest_addr_npi: destination.npi,
                destination_addr: destination.addr,
                esm_class: part.esmClass,
                registered_delivery: 1, // an SMSC delivery receipt on the final outcome (SMPP 3.4 §5.2.17)
                // validity_period in SMPP 3.4 §7.1.1's relative form; the SMSC's default when none is asked.
                ...(validity === undefined ? {} : { validity_period: smppRelativeTime(validity) }),
                data_coding: part.dataCoding,
                short_message: part.shortMessage,
                ...part.tlvs,
              },
              limit.signal,
            );
            return readPartOutcome(outcome, config.receipt_id_format);
          };
          let outcomes = await Promise.all(encoded.parts.map(submitPart));
          // A long message some of whose parts went out must not stop half-way: parts refused for now (throttled,
          // queue full: nothing sent) are offered again with backoff while the send's own bound allows.
          for (let attempt = 0; needsPartRetry(outcomes) && !limit.signal.aborted; attempt++) {
            try {
              await sleep(Math.min(1_000, 50 * 2 ** attempt), undefined, { signal: limit.signal });
            } catch {
              break;
            }
            outcomes = await Promise.all(outcomes.map((o, i) => (o.kind === 'refused' && o.class === 'transient' ? submitPart(encoded.parts[i]!) : o)));
          }
          if (req.waitSignal?.aborted && outcomes.every((o) => o.kind === 'not_sent'))
            return sendFailure('smpp', 'transient', 'not sent: the gateway is shutting down; retry', 'shutting_down');
          return combinePartOutcomes(outcomes);
        } finally {
          limit.dispose();
        }
      },
      // SMPP receipts arrive over the bind; an HTTP request to /dlr/{name} is nobody we know.
      parseReceipt: () => ({ ok: false, reason: 'this provider takes receipts over its SMPP bind, not over HTTP' }),
      close: () => bind.close(),
    };
  },
};
