/**
 * Sandbox provider: accepts messages without any account and later posts receipts to the gateway's own
 * `/dlr/{name}` through the real HTTP path (docs/design.md §3). The outcome is chosen by the recipient's last four digits,
 * so every branch of the gateway can be exercised from the CRM side:
 *
 *   …0001 undelivered receipt   …0002 failed receipt        …0003 no receipt ever (ends as delivery_unknown)
 *   …0004 rejected at send      …0005 transient send error  anything else: delivered
 *
 * Receipts due at the same moment are posted together as one JSON array, which keeps the simulator cheap enough
 * to benchmark the gateway rather than itself. Fault injection for what real providers do to gateways
 * (duplicates and early arrival: docs/providers.md §2.1, §3.3): `early_receipts` posts the receipt before the send call answers, and
 * `duplicate_receipts` posts every receipt twice.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { request } from 'undici';
import { z } from 'zod';
import { callbackEndpoint } from './kit/callback-url.js';
import { ownValue } from './kit/own-key.js';
import { headerValue } from './kit/receipt-input.js';
import {
  providerCommonConfig,
  type IncomingReceipt,
  type InboundParse,
  type MappedStatus,
  type ProviderPlugin,
  type ReceiptParse,
  type SendRequest,
  type SendResult,
} from './types.js';

const configSchema = z.strictObject({
  type: z.literal('sandbox'),
  ...providerCommonConfig,
  dlr_delay_ms: z.number().int().min(0).default(1_000).describe('Milliseconds after the send at which the receipt is posted.'),
  // Unset, only development accepts it (src/config/production-checks.ts): another instance cannot verify a random key.
  receipt_secret: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Key of the HMAC-SHA256 of the body that the sandbox sends in X-Sandbox-Signature and checks on every receipt (and inbound SMS); unsigned or wrongly signed ones get 403. Unset: a random key of the process.',
    ),
  receipts: z
    .boolean()
    .default(true)
    .describe('false: no receipt is posted for any send, as for a number ending 0003, and none is held for later: the send path measured alone (the bench).'),
  early_receipts: z.boolean().default(false).describe('Post the receipt before the send call answers.'),
  duplicate_receipts: z.boolean().default(false).describe('Post every receipt twice.'),
  receipts_name_sms_id: z
    .boolean()
    .default(true)
    .describe(
      "Whether the receipts carry the sms_id of their send. false: only the sandbox's message id, as SMPP's receipts do, so the gateway finds their messages by it (and keeps those messages in its index of providers' message ids, docs/ledger.md).",
    ),
});
type SandboxConfig = z.infer<typeof configSchema>;

type Outcome = 'delivered' | 'undelivered' | 'failed' | 'silent' | 'reject' | 'transient';

const OUTCOME_BY_SUFFIX: Readonly<Record<string, Outcome>> = {
  '0001': 'undelivered',
  '0002': 'failed',
  '0003': 'silent',
  '0004': 'reject',
  '0005': 'transient',
};

export function sandboxOutcome(recipient: string): Outcome {
  return ownValue(OUTCOME_BY_SUFFIX, recipient.slice(-4)) ?? 'delivered';
}

/** Sandbox receipt statuses and what they mean for the CRM. */
export const SANDBOX_STATUS_MAP: Readonly<Record<string, MappedStatus>> = {
  accepted: 'intermediate',
  sent: 'intermediate',
  delivered: 'delivered',
  undelivered: 'undelivered',
  failed: 'failed',
  unknown: 'delivery_unknown',
};

export function mapSandboxStatus(status: string): MappedStatus {
  return ownValue(SANDBOX_STATUS_MAP, status.toLowerCase()) ?? 'delivery_unknown';
}

interface SandboxReceipt {
  sms_id?: string;
  message_id: string;
  status: string;
}

const receiptBodySchema = z.array(z.object({ sms_id: z.string().optional(), message_id: z.string().optional(), status: z.string().min(1) }));

const inboundBodySchema = z.object({
  message_id: z.string().min(1).max(200),
  from: z.string().min(1).max(32),
  to: z.string().min(1).max(32),
  text: z.string().max(2_000),
});

/** The receipt key: the configured secret, else one derived from the process's random secret (per provider name). */
export function sandboxReceiptKey(name: string, config: Pick<SandboxConfig, 'receipt_secret'>, processSecret: Buffer | undefined): string | Buffer {
  if (config.receipt_secret) return config.receipt_secret;
  return createHmac('sha256', processSecret ?? randomBytes(32))
    .update(`sandbox receipts ${name}`)
    .digest();
}

/** The form of sign()'s answer: a header of any other form is refused before the body is hashed. */
const SIGNATURE_FORM = /^[0-9a-f]{64}$/;

function sign(secret: string | Buffer, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export const sandbox: ProviderPlugin<typeof configSchema> = {
  type: 'sandbox',
  configSchema,
  create(name, config: SandboxConfig, deps) {
    const due = new Map<string, SandboxReceipt[]>(); // receipt URL → receipts posted by the next flush
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const inFlight = new Set<Promise<void>>();
    const receiptKey = sandboxReceiptKey(name, config, deps.processSecret);

    async function post(url: string, receipts: SandboxReceipt[]): Promise<void> {
      const body = JSON.stringify(receipts);
      const headers = { 'content-type': 'application/json', 'x-sandbox-signature': sign(receiptKey, body) };
      for (let attempt = 1; attempt <= 3 && !closed; attempt++) {
        try {
          // Bounded, so a gateway that stops answering cannot hold the sandbox's close() (and a shutdown) open.
          const res = await request(url, { method: 'POST', headers, body, headersTimeout: 5_000, bodyTimeout: 5_000 });
          await res.body.dump();
          if (res.statusCode < 500) return;
        } catch (error) {
          deps.logger.debug({ err: error, provider: name }, 'sandbox receipt post failed');
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
      deps.logger.warn({ provider: name, count: receipts.length }, 'sandbox gave up posting receipts');
    }

    function flush(): void {
      timer = undefined;
      for (const [url, receipts] of due) {
        for (let i = 0; i < receipts.length; i += 500) {
          const p = post(url, receipts.slice(i, i + 500)).finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
      }
      due.clear();
    }

    function schedule(callbackUrl: string, receipt: SandboxReceipt): void {
      const url = callbackEndpoint(callbackUrl);
      const list = due.get(url) ?? [];
      list.push(receipt);
      if (config.duplicate_receipts) list.push(receipt);
      due.set(url, list);
      // One timer per delay window: receipts sent close together are posted together.
      timer ??= setTimeout(flush, config.dlr_delay_ms);
    }

    return {
      name,
      type: 'sandbox',
      receiptsNameSmsId: config.receipts_name_sms_id,
      async send(req: SendRequest): Promise<SendResult> {
        const outcome = sandboxOutcome(req.to);
        if (outcome === 'reject') {
          return { ok: false, kind: 'permanent', error: `sandbox rejects ${req.to.slice(0, 4)}…0004`, code: 'rejected' };
        }
        if (outcome === 'transient') {
          return { ok: false, kind: 'transient', error: 'sandbox simulates a temporary provider outage', code: 'unavailable' };
        }
        const messageId = `sbx-${randomUUID()}`;
        if (outcome !== 'silent' && config.receipts && !closed) {
          const receipt = { ...(config.receipts_name_sms_id ? { sms_id: req.smsId } : {}), message_id: messageId, status: outcome };
          if (config.early_receipts) await post(callbackEndpoint(req.callbackUrl), config.duplicate_receipts ? [receipt, receipt] : [receipt]);
          else schedule(req.callbackUrl, receipt);
        }
        return { ok: true, providerMessageIds: [messageId], providerStatus: 'accepted' };
      },

      parseReceipt(receipt: IncomingReceipt): ReceiptParse {
        // Every receipt is signed by the sandbox that sent the message; anything else is a stranger's (docs/security.md).
        const header = headerValue(receipt, 'x-sandbox-signature');
        if (header === undefined) return { ok: false, reason: 'X-Sandbox-Signature is missing' };
        if (!SIGNATURE_FORM.test(header)) return { ok: false, reason: 'X-Sandbox-Signature is not 64 hex digits' };
        const given = Buffer.from(header, 'utf8');
        const expected = Buffer.from(sign(receiptKey, receipt.rawBody), 'utf8');
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          return { ok: false, reason: 'X-Sandbox-Signature does not match the body' };
        }
        let json: unknown;
        try {
          json = JSON.parse(receipt.rawBody.toString('utf8'));
        } catch {
          return { ok: false, reason: 'body is not JSON' };
        }
        const parsed = receiptBodySchema.safeParse(Array.isArray(json) ? json : [json]);
        if (!parsed.success) return { ok: false, reason: 'body is not a sandbox receipt array' };
        return {
          ok: true,
          events: parsed.data.map((r) => ({
            smsId: r.sms_id,
            providerMessageId: r.message_id,
            providerStatus: r.status,
            status: mapSandboxStatus(r.status),
          })),
        };
      },

      /**
       * A player's reply, for trying STOP and START without an account: POST `{message_id, from, to, text}` as JSON,
       * signed like receipts (X-Sandbox-Signature). Only with receipt_secret: an unsigned reply could opt anyone in.
       */
      parseInbound(request: IncomingReceipt): InboundParse {
        if (!config.receipt_secret) return { ok: false, reason: 'inbound messages are only accepted with receipt_secret set' };
        if (!SIGNATURE_FORM.test(request.headers['x-sandbox-signature'] ?? '')) return { ok: false, reason: 'X-Sandbox-Signature is not 64 hex digits' };
        const given = Buffer.from(request.headers['x-sandbox-signature'] ?? '', 'utf8');
        const expected = Buffer.from(sign(config.receipt_secret, request.rawBody), 'utf8');
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'X-Sandbox-Signature does not match the body' };
        let json: unknown;
        try {
          json = JSON.parse(request.rawBody.toString('utf8'));
        } catch {
          return { ok: false, reason: 'body is not JSON' };
        }
        const parsed = inboundBodySchema.safeParse(json);
        if (!parsed.success) return { ok: false, reason: 'body is not {message_id, from, to, text}' };
        return { ok: true, message: { providerMessageId: parsed.data.message_id, from: parsed.data.from, to: parsed.data.to, text: parsed.data.text } };
      },

      async close() {
        if (timer) clearTimeout(timer);
        flush();
        closed = true;
        await Promise.allSettled([...inFlight]);
      },
    };
  },
};
