/**
 * POST /channels/sms/single and /channels/sms/batch: parse, dispatch, and put each message's SendOutcome
 * (src/sms/outcome.ts) in the CRM's words, here and nowhere else: `submitted` is successful (single 200); `rejected`
 * is failed (single 400, never worth a retry); `retryable` and `uncertain` are fatal (single 503 with Retry-After:
 * the CRM retries, and the ledger decides whether the retry sends again).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { requireApiKey } from '../auth/api-key.js';
import type { Config } from '../config/schema.js';
import { activitySources, stringifyExact, type RawJson } from '../http/exact-json.js';
import { errorAnswerSchema } from '../http/error-answer.js';
import { readJsonBody } from '../http/json-body.js';
import { mountRoutes, route, type ResponseDoc } from '../http/route-table.js';
import { smsMessageSchema } from './message-schema.js';
import type { DispatchResult, Dispatcher } from './dispatch.js';
import type { SendOutcome } from './outcome.js';
import { prepareBatch, prepareMessage, type Invalid } from './prepare.js';
import type { IntakeNotices } from './intake-notices.js';
import type { ProviderRouter } from '../provider-wrappers/registry.js';

/** The answers' schemas: the OpenAPI document's, and BatchAnswer's type below. */
const singleAnswerSchema = z.strictObject({ sms_id: z.string().describe('Our id for the message; conversions carry it') });

const refusalCode = z
  .enum(['recipient_ambiguous', 'recipient_country_mismatch', 'budget_exceeded', 'country_not_allowed', 'number_type_not_allowed'])
  .optional()
  .describe(
    'The recipient\'s reading refused it (docs/operator-api.md, "Requests as the CRM sends them"), where it goes is not allowed (docs/routing.md, "Countries allowed"), or it would pass a budget (docs/costs.md); absent for other refusals',
  );

const singleRefusalSchema = z.strictObject({
  error: z.string(),
  code: refusalCode,
  sms_id: z.string().optional().describe('Present when the provider refused a message we had already recorded'),
});

const echoedId = z.union([z.string(), z.number(), z.null()]).describe('activity.id exactly as received, with its JSON type (null when absent)');
const batchEntry = z.strictObject({ id: echoedId, sms_id: z.string().optional(), error: z.string(), code: refusalCode });

const batchAnswerSchema = z.strictObject({
  successful: z.array(z.strictObject({ id: echoedId, sms_id: z.string() })),
  failed: z.array(batchEntry).describe('Permanent: the CRM does not retry these'),
  fatal: z.array(batchEntry).describe('Transient: the CRM retries these'),
});

export type BatchAnswer = z.infer<typeof batchAnswerSchema>;

const common: Record<number, ResponseDoc> = {
  401: { description: 'X-Api-Key missing or not valid', schema: errorAnswerSchema },
  413: { description: 'Body larger than server.body_limit_bytes', schema: errorAnswerSchema },
  415: { description: 'Content-Type is not application/json', schema: errorAnswerSchema },
};

export interface SmsRouteDeps {
  sms: Config['sms'];
  apiKeys: readonly string[];
  router: ProviderRouter;
  dispatcher: Dispatcher;
  now: () => number;
  /** Told of each field read otherwise than sent (a sender no SMS can carry, an unknown encoding): counted and logged. */
  notices?: IntakeNotices;
}

/** The CRM's class for each outcome (its batch answer's three arrays). */
const CRM_CLASS: Readonly<Record<SendOutcome, keyof BatchAnswer>> = { submitted: 'successful', rejected: 'failed', retryable: 'fatal', uncertain: 'fatal' };
const SINGLE_STATUS = { successful: 200, failed: 400, fatal: 503 } as const;

type WithId<T, Id> = Omit<T, 'id'> & { id: Id };
/** A batch answer whose ids may be kept as their received text (numbers beyond what a double holds exactly). */
export type BatchReply<Id> = { [K in keyof BatchAnswer]: Array<WithId<BatchAnswer[K][number], Id>> };

/** Puts each batch entry in exactly one of the three arrays, with its id as received. */
export function categoriseBatch<Id = BatchAnswer['successful'][number]['id']>(
  ids: Array<Id | null>,
  results: Array<DispatchResult | Invalid>,
): BatchReply<Id | null> {
  const answer: BatchReply<Id | null> = { successful: [], failed: [], fatal: [] };
  results.forEach((r, i) => {
    const id = ids[i] ?? null;
    if (r.outcome === 'submitted') answer.successful.push({ id, sms_id: r.smsId });
    else if (r.outcome !== 'invalid' && CRM_CLASS[r.outcome] === 'fatal') answer.fatal.push({ id, ...(r.smsId ? { sms_id: r.smsId } : {}), error: r.error });
    else
      answer.failed.push({
        id,
        ...('smsId' in r && r.smsId ? { sms_id: r.smsId } : {}),
        error: r.error,
        ...('code' in r && r.code ? { code: r.code as BatchAnswer['failed'][number]['code'] } : {}),
      });
  });
  return answer;
}

export function smsRoutes(deps: SmsRouteDeps) {
  const { sms, router, dispatcher, now } = deps;
  const app = new Hono();
  app.use('*', requireApiKey(deps.apiKeys));

  mountRoutes(app, [
    route({
      method: 'post',
      path: '/single',
      doc: {
        tag: 'sms',
        summary: 'Send one SMS',
        description: 'Idempotent on activity.id: a retry of a sent id answers the same sms_id and sends nothing.',
        security: ['crmApiKey'],
        request: { schema: smsMessageSchema },
        responses: {
          200: { description: 'Sent (handed to the provider)', schema: singleAnswerSchema },
          400: { description: 'Permanent problem with this message (invalid field, or the provider refused it); do not retry', schema: singleRefusalSchema },
          ...common,
          503: {
            description: 'Transient problem; retry later',
            schema: errorAnswerSchema,
            headers: { 'Retry-After': { description: 'Seconds to wait', schema: z.string() } },
          },
        },
      },
      handlers: [
        async (c) => {
          const body = await readJsonBody(c);
          if (!body.ok) return c.json({ error: body.error }, body.status);
          const prepared = prepareMessage(body.value, router, sms, activitySources(body.text)?.[0]);
          if (!prepared.ok) return c.json({ error: prepared.error }, 400);
          if (prepared.message.notes.length > 0) deps.notices?.(prepared.message.notes);
          // Over a provider's rate or concurrency limit a single waits at most sms.single_wait, then answers 503.
          const at = now();
          const [result] = await dispatcher.dispatch([prepared.message], {
            deadline: at + sms.send_timeout,
            waitDeadline: at + sms.single_wait,
            concurrency: 1,
            requestId: c.get('requestId'),
            traceparent: c.get('traceparent'),
          });
          if (result!.outcome === 'submitted') return c.json({ sms_id: result!.smsId }, SINGLE_STATUS.successful);
          if (CRM_CLASS[result!.outcome] === 'failed')
            return c.json(
              { error: result!.error, ...(result!.code ? { code: result!.code } : {}), ...(result!.smsId ? { sms_id: result!.smsId } : {}) },
              SINGLE_STATUS.failed,
            );
          c.header('Retry-After', '1');
          return c.json({ error: result!.error }, SINGLE_STATUS.fatal);
        },
      ],
    }),
    route({
      method: 'post',
      path: '/batch',
      doc: {
        tag: 'sms',
        summary: 'Send many SMS',
        description: 'Every entry appears in exactly one of the three arrays. Entries not sent by sms.batch_deadline are fatal.',
        security: ['crmApiKey'],
        request: { schema: z.array(smsMessageSchema) },
        responses: {
          200: { description: 'Each entry classified', schema: batchAnswerSchema },
          400: { description: 'The body is not a JSON array', schema: errorAnswerSchema },
          ...common,
        },
      },
      handlers: [
        async (c) => {
          const body = await readJsonBody(c, { list: true });
          if (!body.ok) return c.json({ error: body.error }, body.status);
          if (!Array.isArray(body.value)) return c.json({ error: 'body: must be a JSON array of SMS message objects' }, 400);
          const deadline = now() + sms.batch_deadline;
          // Nothing below keeps the body or its parsed entries (prepareBatch), so they are not held while it sends.
          const batch = prepareBatch(body.value, body.text, body.refusedEntries, router, sms);
          for (const message of batch.valid) if (message.notes.length > 0) deps.notices?.(message.notes);
          const dispatched = await dispatcher.dispatch(batch.valid, {
            deadline,
            concurrency: sms.batch_concurrency,
            requestId: c.get('requestId'),
            traceparent: c.get('traceparent'),
          });
          dispatched.forEach((r, k) => (batch.results[batch.validIndex[k]!] = r));
          const answer = categoriseBatch<string | number | RawJson>(batch.ids, batch.results);
          // Only a body holding numbers a double cannot keep exactly needs the slower writer.
          return batch.exact ? c.body(stringifyExact(answer), 200, { 'content-type': 'application/json' }) : c.json(answer, 200);
        },
      ],
    }),
  ]);
  return app;
}
