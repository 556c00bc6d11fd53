/**
 * The operator API the CRM calls (docs/crm-interface.md §A; GET /userblocks from docs/crm-interface.md §2.2): parse, call the
 * backend, map its result. `auth` is the middleware of the configured auth.mode; it is attached per route, because
 * this sub-app is mounted at the root and must not guard anything else.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import { z } from 'zod';
import { readJsonBody } from '../http/json-body.js';
import type { BackendResult, CreditRequest, OperatorBackend } from './backend.js';
import { readCrmReferences } from '../crm/references.js';
import { reconciliationHandler } from './reconciliation-route.js';
import { authenticateRequestSchema, bonusCreditSchema, fundsCreditSchema, parseBody, parseConsentsUpdate } from './requests.js';
import type { SessionCheck } from './session-check.js';
import { statusOf } from './status.js';

export interface OperatorRouteDeps {
  backend: OperatorBackend;
  /** POST /authenticate's check (session-check.ts). */
  sessionCheck: SessionCheck;
  auth: MiddlewareHandler;
  logger: Logger;
}

/** The docs do not define success bodies for writes; this mirrors the Success/Errors wrapper of GET /bonus/list. */
const SUCCESS = { Success: true, Errors: [] as string[] };

/** What the routes answer beyond the CRM's shapes (src/crm/shapes.ts), for the OpenAPI document (route-docs.ts). */
export const successAnswerSchema = z.strictObject({ Success: z.literal(true), Errors: z.array(z.string()).max(0) });
export const creditAnswerSchema = z.strictObject({
  ...successAnswerSchema.shape,
  credit_id: z.string().describe('The gateway’s id of the credit (the first one’s, for a repeat)'),
});

function answer<T>(c: Context, result: BackendResult<T>, privateData = true) {
  // Player data must never sit in a cache between the CRM and us (docs/crm-interface.md, GET /userdetails).
  if (privateData) c.header('Cache-Control', 'no-store');
  if (result.ok) return c.json(result.value as object, 200);
  if (result.kind === 'busy') c.header('Retry-After', '1');
  return c.json({ error: result.error }, statusOf(result.kind));
}

export function operatorRoutes({ backend, sessionCheck, auth, logger }: OperatorRouteDeps) {
  const app = new Hono();

  // Never cached, here or between: a session ends at the operator's word (session-check.ts).
  app.post('/authenticate', auth, async (c) => {
    c.header('Cache-Control', 'no-store');
    const body = await readJsonBody(c);
    if (!body.ok) return c.json({ error: body.error }, body.status);
    const parsed = parseBody(authenticateRequestSchema, body.value);
    if (!parsed.ok) return c.json({ error: parsed.error }, 400);
    const verdict = await sessionCheck(parsed.value.sid);
    if (verdict.ok) return c.json({ user_id: verdict.userId }, 200);
    return c.json({ error: verdict.error }, verdict.code);
  });

  app.get('/userdetails/:userid', auth, async (c) => answer(c, await backend.userDetails(c.req.param('userid'))));
  app.get('/userconsents/:userid', auth, async (c) => answer(c, await backend.userConsents(c.req.param('userid'))));
  app.get('/userblocks/:userid', auth, async (c) => answer(c, await backend.userBlocks(c.req.param('userid'))));

  app.post('/userconsents/:userid', auth, async (c) => {
    const body = await readJsonBody(c);
    if (!body.ok) return c.json({ error: body.error }, body.status);
    const parsed = parseConsentsUpdate(body.value);
    if (!parsed.ok) return c.json({ error: parsed.error }, 400);
    const result = await backend.updateConsents(c.req.param('userid'), parsed.value.consents, body.value);
    return answer(c, result.ok ? { ok: true, value: SUCCESS } : result);
  });

  // An error is {error, code} like every other (the CRM's error schema allows no other key, so not the wrapper).
  app.get('/bonus/list', auth, async (c) => answer(c, await backend.bonusList(), false));

  const credit = (kind: CreditRequest['kind']) => async (c: Context) => {
    const body = await readJsonBody(c);
    if (!body.ok) return c.json({ error: body.error }, body.status);
    const parsed = kind === 'bonus' ? parseBody(bonusCreditSchema, body.value) : parseBody(fundsCreditSchema, body.value);
    if (!parsed.ok) return c.json({ error: parsed.error }, 400);
    const v = parsed.value;
    const result = await backend.credit({
      kind,
      userId: v.user_id,
      bonusCode: v.bonus_code,
      amount: v.amount,
      currency: v.currency,
      body: body.value,
      refs: readCrmReferences((name) => c.req.header(name)),
    });
    if (!result.ok) return answer(c, result, false);
    // A repeat answers exactly what the first request got; the header only tells a human reading logs.
    if (result.value.repeated) c.header('Idempotent-Replayed', 'true');
    return c.json({ ...SUCCESS, credit_id: result.value.creditId }, 200);
  };
  app.post('/bonus/credit', auth, credit('bonus'));
  app.post('/bonus/credit/funds', auth, credit('funds'));

  app.post('/reconciliation', auth, reconciliationHandler(backend, logger));
  app.post('/reconciliation/products', auth, reconciliationHandler(backend, logger, { byProduct: true }));
  return app;
}
