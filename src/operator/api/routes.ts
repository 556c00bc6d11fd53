/**
 * The operator API the CRM calls (docs/crm-interface.md §A; GET /userblocks from docs/crm-interface.md §2.2): parse, call the
 * backend, map its result. `auth` is the middleware of the configured auth.mode; it is attached per route, because
 * this sub-app is mounted at the root and must not guard anything else.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '../../config/schema.js';
import { readJsonBody } from '../../http/json-body.js';
import { stringifyExact } from '../../http/exact-json.js';
import { mountRoutes, route, type ParameterDoc, type ResponseDoc, type RouteDoc, type SecurityName } from '../../http/route-table.js';
import { RECONCILIATION_FIELDS } from '../../crm/shapes.js';
import { CRM_HEADERS } from '../../crm/references.js';
import { crmError } from '../../http/operator-errors.js';
import { crmBonusListSchema, crmUserBlocksSchema, crmUserConsentsSchema, crmUserDetailsSchema } from '../../crm/contract.js';
import type { BackendResult, CreditRequest, OperatorBackend } from '../backend.js';
import { crmSpelling, misspeltCrmHeaders, readCrmReferences } from '../../crm/references.js';
import { reconciliationHandler } from './reconciliation-route.js';
import {
  authenticateRequestSchema,
  bonusCreditSchema,
  consentsUpdateSchema,
  fundsCreditSchema,
  readBody,
  parseConsentsUpdate,
  productReconciliationRequestSchema,
  reconciliationRequestSchema,
} from '../requests.js';
import { userParam } from '../route-docs.js';
import type { SessionCheck } from './session-check.js';
import { statusOf } from './status.js';

const SECURITY: Record<Config['auth']['mode'], SecurityName> = { api_key: 'operatorApiKey', basic: 'operatorBasic', oauth: 'operatorOAuth' };

const notJsonCrm = { 415: crmError('Content-Type is not application/json') };
/** The headers of the one-action key (src/crm/references.ts oneActionKey), as the CRM spells them. */
const ONE_ACTION_HEADERS = [CRM_HEADERS.activity_id, CRM_HEADERS.action_id, CRM_HEADERS.trigger_hash].map(crmSpelling).join(', ');
const crmHeaders: ParameterDoc[] = Object.values(CRM_HEADERS).map((name) => ({
  name: crmSpelling(name),
  in: 'header',
  description: `Stored with the credit; ${ONE_ACTION_HEADERS} with user_id make the one-action key (a repeat is answered as the first, not credited again). Another spelling of it (X-Crm-Activity-Id) is refused with 400 naming this one.`,
  schema: z.string(),
}));

export interface OperatorRouteDeps {
  backend: OperatorBackend;
  /** auth.mode: which security scheme (and 401) the document names. */
  mode: Config['auth']['mode'];
  /** POST /authenticate's check (session-check.ts). */
  sessionCheck: SessionCheck;
  /**
   * POST /authenticate's own bound on refused sessions (src/auth/failure-limit.ts `limitRefusedSessions`), after
   * `auth`: a player's refused session never counts against the CRM's credential. Absent: no bound.
   */
  sessionLimit?: MiddlewareHandler;
  auth: MiddlewareHandler;
  logger: Logger;
  /** operator.send_deleted_at: whether a deleted player's record carries deleted_at (docs/operator-api.md). */
  sendDeletedAt?: boolean;
}

/** The docs do not define success bodies for writes; this mirrors the Success/Errors wrapper of GET /bonus/list. */
const SUCCESS = { Success: true, Errors: [] as string[] };

/** What the routes answer beyond the CRM's shapes (src/crm/shapes.ts), for the OpenAPI document. */
const successAnswerSchema = z.strictObject({ Success: z.literal(true), Errors: z.array(z.string()).max(0) });
const creditAnswerSchema = z.strictObject({
  ...successAnswerSchema.shape,
  credit_id: z.string().describe('The gateway’s id of the credit (the first one’s, for a repeat)'),
});

function answer<T>(c: Context, result: BackendResult<T>, privateData = true) {
  // Player data must never sit in a cache between the CRM and us (docs/crm-interface.md, GET /userdetails).
  if (privateData) c.header('Cache-Control', 'no-store');
  // stringifyExact: a platform's number a double would change is RawJson (upstream.ts) and is answered as written.
  if (result.ok) return c.body(stringifyExact(result.value), 200, { 'content-type': 'application/json' });
  if (result.kind === 'busy') c.header('Retry-After', '1');
  return c.json({ error: result.error }, statusOf(result.kind));
}

/**
 * A user record as answered: deleted_at only when operator.send_deleted_at is on, because the CRM maker's schema
 * allows no key outside its list and the CRM's check would refuse the whole record (docs/operator-api.md).
 */
export function userDetailsAnswer<T extends { deleted_at?: string | undefined }>(record: T, sendDeletedAt: boolean): T {
  if (sendDeletedAt || record.deleted_at === undefined) return record;
  const { deleted_at: _dropped, ...rest } = record;
  return rest as T;
}

export function operatorRoutes({ backend, mode, sessionCheck, sessionLimit, auth, logger, sendDeletedAt = false }: OperatorRouteDeps) {
  const app = new Hono();

  const security = [SECURITY[mode]];
  const unauthorized = { 401: crmError(`Credentials missing or not valid (auth.mode ${mode})`) };
  // Only the http backend asks another system, which may fail, be slow, or be crediting the same action right now.
  const upstream: Record<number, ResponseDoc> =
    backend.name === 'http'
      ? {
          502: crmError('The operator platform answered an error or something the CRM would reject'),
          504: crmError('The operator platform did not answer in time'),
        }
      : {};
  const doc = (d: Omit<RouteDoc, 'tag' | 'security'>): RouteDoc => ({ ...d, tag: 'operator', security });
  const noUser = { 404: crmError('No such user') };

  const credit = (kind: CreditRequest['kind']) => async (c: Context) => {
    const misspelt = misspeltCrmHeaders(Object.keys(c.req.header()));
    if (misspelt.length > 0) {
      const named = misspelt.map((m) => `header ${m.given} is not read: the CRM sends ${m.expected}`).join('; ');
      return c.json({ error: `${named} (a repeat is recognised by ${ONE_ACTION_HEADERS} and user_id)` }, 400);
    }
    // Numbers kept as written (exact-json.ts): the body is stored and sent on, and re-serialising a double rounds them;
    // for the same reason a prototype key is refused here rather than handed to the operator's platform.
    const parsed = await readBody(c, kind === 'bonus' ? bonusCreditSchema : fundsCreditSchema, { exactNumbers: true, refusePrototypeKeys: true });
    if (!parsed.ok) return c.json({ error: parsed.error }, parsed.status);
    const v = parsed.value;
    const result = await backend.credit({
      kind,
      userId: v.user_id,
      bonusCode: v.bonus_code,
      amount: v.amount === null ? null : Number(String(v.amount)),
      currency: v.currency,
      body: parsed.body,
      refs: readCrmReferences((name) => c.req.header(name)),
    });
    if (!result.ok) return answer(c, result, false);
    // A repeat answers exactly what the first request got; the header only tells a human reading logs.
    if (result.value.repeated) c.header('Idempotent-Replayed', 'true');
    return c.json({ ...SUCCESS, credit_id: result.value.creditId }, 200);
  };
  const creditDoc = (kind: CreditRequest['kind']): RouteDoc =>
    doc({
      summary: kind === 'bonus' ? 'Credit a bonus' : 'Credit a bonus with an amount',
      parameters: crmHeaders,
      request: { schema: kind === 'bonus' ? bonusCreditSchema : fundsCreditSchema },
      responses: {
        200: { description: 'Credited, or a repeat of an action already credited (then with Idempotent-Replayed: true)', schema: creditAnswerSchema },
        // The interface names 400 and 500 only: `code` keeps the finer reason (docs/operator-api.md "Credit answers").
        400: crmError(
          'Can never succeed as sent: body not JSON (code 400 or 415), a bad field, an X-Crm-* header spelt otherwise than the CRM spells it, an unknown user (code 404) or a bonus_code not in the bonus list',
        ),
        ...unauthorized,
        500: crmError(
          'May succeed when retried: code 500, or 502/504 (the operator platform failed or was slow) or 503 (the same credit is being handled now)',
        ),
      },
    });

  mountRoutes(app, [
    route({
      method: 'get',
      path: '/userdetails/:userid',
      doc: doc({
        summary: 'A user’s details',
        parameters: [userParam],
        responses: { 200: { description: 'The user record', schema: crmUserDetailsSchema }, ...unauthorized, ...noUser, ...upstream },
      }),
      handlers: [
        auth,
        async (c) => {
          const result = await backend.userDetails(c.req.param('userid'));
          return answer(c, result.ok ? { ...result, value: userDetailsAnswer(result.value, sendDeletedAt) } : result);
        },
      ],
    }),
    route({
      method: 'get',
      path: '/userconsents/:userid',
      doc: doc({
        summary: 'A user’s consents (all six types)',
        parameters: [userParam],
        responses: { 200: { description: 'The consents', schema: crmUserConsentsSchema }, ...unauthorized, ...noUser, ...upstream },
      }),
      handlers: [auth, async (c) => answer(c, await backend.userConsents(c.req.param('userid')))],
    }),
    route({
      method: 'post',
      path: '/userconsents/:userid',
      doc: doc({
        summary: 'Change some of a user’s consents',
        description: 'Types not listed keep their value.',
        parameters: [userParam],
        request: { schema: consentsUpdateSchema },
        responses: {
          200: { description: 'Changed', schema: successAnswerSchema },
          400: crmError('The body is not JSON or not a valid consents list'),
          ...unauthorized,
          ...noUser,
          ...notJsonCrm,
          ...upstream,
        },
      }),
      handlers: [
        auth,
        async (c) => {
          // Exact numbers: the http backend forwards the body, keys the gateway does not read included.
          const body = await readJsonBody(c, { exactNumbers: true });
          if (!body.ok) return c.json({ error: body.error }, body.status);
          const parsed = parseConsentsUpdate(body.value);
          if (!parsed.ok) return c.json({ error: parsed.error }, 400);
          const result = await backend.updateConsents(c.req.param('userid'), parsed.value.consents, body.value);
          return answer(c, result.ok ? { ok: true, value: SUCCESS } : result);
        },
      ],
    }),
    route({
      method: 'get',
      path: '/userblocks/:userid',
      doc: doc({
        summary: 'A user’s blocks and exclusions',
        parameters: [userParam],
        responses: { 200: { description: 'The blocks', schema: crmUserBlocksSchema }, ...unauthorized, ...noUser, ...upstream },
      }),
      handlers: [auth, async (c) => answer(c, await backend.userBlocks(c.req.param('userid')))],
    }),
    // An error is {error, code} like every other (the CRM's error schema allows no other key, so not the wrapper).
    route({
      method: 'get',
      path: '/bonus/list',
      doc: doc({
        summary: 'The bonuses the CRM may credit',
        responses: {
          200: { description: 'The list', schema: crmBonusListSchema },
          ...unauthorized,
          ...upstream,
        },
      }),
      handlers: [auth, async (c) => answer(c, await backend.bonusList(), false)],
    }),
    route({ method: 'post', path: '/bonus/credit', doc: creditDoc('bonus'), handlers: [auth, credit('bonus')] }),
    route({ method: 'post', path: '/bonus/credit/funds', doc: creditDoc('funds'), handlers: [auth, credit('funds')] }),
    route({
      method: 'post',
      path: '/reconciliation',
      doc: doc({
        summary: 'The ids of every user with a flag or consent set',
        description:
          'The whole list or none of it: the ids are read to the end (spooled to a temporary file) before the answer starts, and a failure while reading answers 200 with `error` instead of `users` and `timestamp`, so a partial list is never sent.',
        // The route takes any string and answers 501 for an unknown one (docs/crm-interface.md); the document lists the
        // ones it implements, so a client built from it sends only those.
        request: { schema: reconciliationRequestSchema.extend({ field: z.enum(Object.keys(RECONCILIATION_FIELDS) as [string, ...string[]]) }) },
        responses: {
          200: {
            description: 'The user ids',
            schema: z.union([
              z.strictObject({ users: z.array(z.string()), timestamp: z.string().describe('RFC 3339: when the list was read') }),
              z.strictObject({
                error: z.string().describe('Why the list could not be read to the end; run the reconciliation again'),
                code: z.number().int().describe('1001 or 1002 (docs/operator-api.md "Error codes")'),
              }),
            ]),
          },
          400: crmError('The body is not JSON or field is not a string'),
          ...unauthorized,
          ...notJsonCrm,
          501: crmError('field is not one of the known reconciliation keys'),
          ...upstream,
        },
      }),
      handlers: [auth, reconciliationHandler(backend, logger)],
    }),
    route({
      method: 'post',
      path: '/reconciliation/products',
      doc: doc({
        summary: 'The ids of every user opted in to a channel for one product (UK product-level consents)',
        description:
          'Our choice of body, as the CRM documents none (docs/operator-api.md "Reconciliation by product"): a consent field and a product. A user opted in to the channel without a product split counts for every product. Answers and errors as POST /reconciliation.',
        request: {
          schema: productReconciliationRequestSchema.extend({
            field: z.enum(Object.keys(RECONCILIATION_FIELDS).filter((f) => f.startsWith('consent_')) as [string, ...string[]]),
          }),
        },
        responses: {
          200: {
            description: 'The user ids',
            schema: z.union([
              z.strictObject({ users: z.array(z.string()), timestamp: z.string().describe('RFC 3339: when the list was read') }),
              z.strictObject({ error: z.string(), code: z.number().int().describe('1001 or 1002 (docs/operator-api.md "Error codes")') }),
            ]),
          },
          400: crmError('The body is not JSON, field is not a string or product is missing'),
          ...unauthorized,
          ...notJsonCrm,
          501: crmError('field is not one of the consent reconciliation keys'),
          ...upstream,
        },
      }),
      handlers: [auth, reconciliationHandler(backend, logger, { byProduct: true })],
    }),
    // Never cached, here or between: a session ends at the operator's word (session-check.ts).
    route({
      method: 'post',
      path: '/authenticate',
      doc: doc({
        summary: 'Whose site session is this (the CRM’s inbox, on-site messages and pending bonuses)',
        description:
          'Checked by the operator’s platform (operator.authenticate_url) or locally as a signed session token (operator.session_tokens), afresh on every call. Anything but a valid session is a 401; `code` tells why (401 not valid, 400/415 a bad body, 502/504 the check itself failed). A refused session never counts against the CRM’s credentials; past operator.session_failure_budget refused sessions from one address per operator.session_failure_window, this path alone answers 429 with Retry-After.',
        request: { schema: authenticateRequestSchema },
        responses: {
          200: { description: 'A valid session', schema: z.strictObject({ user_id: z.string() }) },
          401: crmError('Not a valid session, bad credentials, or the session could not be checked'),
          429: crmError('Too many refused sessions from this address (operator.session_failure_budget), or too many failed authentications'),
        },
      }),
      handlers: [
        auth,
        ...(sessionLimit ? [sessionLimit] : []),
        async (c) => {
          c.header('Cache-Control', 'no-store');
          const parsed = await readBody(c, authenticateRequestSchema);
          if (!parsed.ok) return c.json({ error: parsed.error }, parsed.status);
          const verdict = await sessionCheck(parsed.value.sid);
          if (verdict.ok) return c.json({ user_id: verdict.userId }, 200);
          return c.json({ error: verdict.error }, verdict.code);
        },
      ],
    }),
  ]);
  return app;
}
