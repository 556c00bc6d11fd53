/**
 * OpenAPI description of the operator API the CRM calls, its /admin loading API and, in oauth mode, /oauth/token.
 * Request bodies are the schemas the routes validate with (requests.ts); answers are the CRM's shapes (src/crm/shapes.ts)
 * and the routes' own answer schemas. Which error statuses can occur depends on operator.backend (only the http
 * backend has an upstream to fail, time out or be busy), and the security on auth.mode.
 */
import { z } from 'zod';
import type { Config } from '../config/schema.js';
import { tokenAnswerSchema, tokenRequestSchema } from '../auth/oauth.js';
import { errorAnswerSchema } from '../http/error-answer.js';
import { describeRoute, type ParameterDoc, type ResponseDoc, type RouteDoc, type SecurityName } from '../observability/openapi.js';
import { bonusesLoadedAnswerSchema, creditReplayAnswerSchema, creditReplaySchema, creditsAnswerSchema, userLoadedAnswerSchema } from './admin-routes.js';
import { consentsAnswerSchema, RECONCILIATION_FIELDS } from '../crm/shapes.js';
import { CRM_HEADERS } from '../crm/references.js';
import {
  adminBonusesSchema,
  adminConsentsSchema,
  adminUserSchema,
  bonusCreditSchema,
  consentsUpdateSchema,
  fundsCreditSchema,
  authenticateRequestSchema,
  productReconciliationRequestSchema,
  reconciliationRequestSchema,
} from './requests.js';
import { creditAnswerSchema, successAnswerSchema } from './routes.js';
import { crmBonusListSchema, crmErrorSchema, crmUserBlocksSchema, crmUserConsentsSchema, crmUserDetailsSchema } from '../crm/contract.js';

export interface OperatorDocOptions {
  mode: Config['auth']['mode'];
  backend: Config['operator']['backend'];
}

const SECURITY: Record<Config['auth']['mode'], SecurityName> = { api_key: 'operatorApiKey', basic: 'operatorBasic', oauth: 'operatorOAuth' };

const error = (description: string): ResponseDoc => ({ description, schema: errorAnswerSchema });
/** The operator API's errors carry the CRM's {error, code} (src/http/operator-errors.ts). */
const crmError = (description: string): ResponseDoc => ({ description, schema: crmErrorSchema });
const userParam: ParameterDoc = { name: 'userid', in: 'path', description: 'The operator’s user id', schema: z.string() };
const notJson = { 415: error('Content-Type is not application/json') };
const notJsonCrm = { 415: crmError('Content-Type is not application/json') };
const crmHeaders: ParameterDoc[] = Object.values(CRM_HEADERS).map((name) => ({
  name,
  in: 'header',
  description:
    'Stored with the credit; X-Crm-ActivityId, X-Crm-ActionId and X-Crm-TriggerHash with user_id make the one-action key (a repeat is answered as the first, not credited again)',
  schema: z.string(),
}));

export function operatorRouteDocs({ mode, backend }: OperatorDocOptions): RouteDoc[] {
  const security = [SECURITY[mode]];
  const unauthorized = { 401: crmError(`Credentials missing or not valid (auth.mode ${mode})`) };
  // Only the http backend asks another system, which may fail, be slow, or be crediting the same action right now.
  const upstream: Record<number, ResponseDoc> =
    backend === 'http'
      ? {
          502: crmError('The operator platform answered an error or something the CRM would reject'),
          504: crmError('The operator platform did not answer in time'),
        }
      : {};
  const route = (doc: Omit<RouteDoc, 'tag' | 'security'>) => describeRoute({ ...doc, tag: 'operator', security });
  const noUser = { 404: crmError('No such user') };

  return [
    route({
      method: 'get',
      path: '/userdetails/{userid}',
      summary: 'A user’s details',
      parameters: [userParam],
      responses: { 200: { description: 'The user record', schema: crmUserDetailsSchema }, ...unauthorized, ...noUser, ...upstream },
    }),
    route({
      method: 'get',
      path: '/userconsents/{userid}',
      summary: 'A user’s consents (all six types)',
      parameters: [userParam],
      responses: { 200: { description: 'The consents', schema: crmUserConsentsSchema }, ...unauthorized, ...noUser, ...upstream },
    }),
    route({
      method: 'post',
      path: '/userconsents/{userid}',
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
    route({
      method: 'get',
      path: '/userblocks/{userid}',
      summary: 'A user’s blocks and exclusions',
      parameters: [userParam],
      responses: { 200: { description: 'The blocks', schema: crmUserBlocksSchema }, ...unauthorized, ...noUser, ...upstream },
    }),
    route({
      method: 'get',
      path: '/bonus/list',
      summary: 'The bonuses the CRM may credit',
      responses: {
        200: { description: 'The list', schema: crmBonusListSchema },
        ...unauthorized,
        ...upstream,
      },
    }),
    ...(
      [
        ['/bonus/credit', 'Credit a bonus', bonusCreditSchema],
        ['/bonus/credit/funds', 'Credit a bonus with an amount', fundsCreditSchema],
      ] as const
    ).map(([path, summary, schema]) =>
      route({
        method: 'post',
        path,
        summary,
        parameters: crmHeaders,
        request: { schema },
        responses: {
          200: { description: 'Credited, or a repeat of an action already credited (then with Idempotent-Replayed: true)', schema: creditAnswerSchema },
          // The interface names 400 and 500 only: `code` keeps the finer reason (docs/operator-api.md "Credit answers").
          400: crmError(
            'Can never succeed as sent: body not JSON (code 400 or 415), a bad field, an unknown user (code 404) or a bonus_code not in the bonus list',
          ),
          ...unauthorized,
          500: crmError(
            'May succeed when retried: code 500, or 502/504 (the operator platform failed or was slow) or 503 (the same credit is being handled now)',
          ),
        },
      }),
    ),
    route({
      method: 'post',
      path: '/reconciliation',
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
    route({
      method: 'post',
      path: '/reconciliation/products',
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
    route({
      method: 'post',
      path: '/authenticate',
      summary: 'Whose site session is this (the CRM’s inbox, on-site messages and pending bonuses)',
      description:
        'Checked by the operator’s platform (operator.authenticate_url) or locally as a signed session token (operator.session_tokens), afresh on every call. Anything but a valid session is a 401; `code` tells why (401 not valid, 400/415 a bad body, 502/504 the check itself failed).',
      request: { schema: authenticateRequestSchema },
      responses: {
        200: { description: 'A valid session', schema: z.strictObject({ user_id: z.string() }) },
        401: crmError('Not a valid session, bad credentials, or the session could not be checked'),
      },
    }),
  ];
}

/** /oauth/token: mounted in auth.mode oauth only. */
export function oauthRouteDocs(): RouteDoc[] {
  const responses = (contentType: boolean): Record<number, ResponseDoc> => ({
    200: {
      description: 'An access token',
      schema: tokenAnswerSchema,
      headers: { 'Cache-Control': { description: 'no-store', schema: z.literal('no-store') } },
    },
    400: crmError(
      contentType
        ? 'The body is not JSON, or a parameter is missing, or grant_type is not client_credentials'
        : 'A parameter is missing, or grant_type is not client_credentials',
    ),
    401: crmError('client_id or client_secret is not valid'),
    ...(contentType
      ? { 415: crmError('Content-Type is neither application/json nor application/x-www-form-urlencoded') }
      : ({} as Record<number, ResponseDoc>)),
  });
  return [
    describeRoute({
      method: 'post',
      path: '/oauth/token',
      tag: 'operator',
      summary: 'An access token for the operator API (client credentials)',
      request: { schema: tokenRequestSchema, contentTypes: ['application/json', 'application/x-www-form-urlencoded'] },
      responses: responses(true),
    }),
    describeRoute({
      method: 'get',
      path: '/oauth/token',
      tag: 'operator',
      summary: 'An access token for the operator API (client credentials as query parameters)',
      parameters: Object.keys(tokenRequestSchema.shape).map((name) => ({
        name,
        in: 'query' as const,
        required: true,
        schema: tokenRequestSchema.shape[name as keyof typeof tokenRequestSchema.shape],
      })),
      responses: responses(false),
    }),
  ];
}

export function operatorAdminRouteDocs({ backend }: Pick<OperatorDocOptions, 'backend'>): RouteDoc[] {
  const refusals: Record<number, ResponseDoc> = {
    401: error('Bearer token missing or not admin.api_key'),
    403: error('The admin API is disabled (admin.api_key is not set)'),
  };
  // With the http backend the loading routes refuse: the CRM's reads would never see what they load.
  const sqlOnly: Record<number, ResponseDoc> = backend === 'http' ? { 409: error('operator.backend is http: player data is not loaded here') } : {};
  const route = (doc: Omit<RouteDoc, 'tag' | 'security'>) => describeRoute({ ...doc, tag: 'operator admin', security: ['adminBearer'] });
  return [
    route({
      method: 'put',
      path: '/admin/users/{userid}',
      summary: 'Create or replace a user (sql backend)',
      parameters: [userParam],
      request: { schema: adminUserSchema },
      responses: {
        200: { description: 'Replaced', schema: userLoadedAnswerSchema },
        201: { description: 'Created', schema: userLoadedAnswerSchema },
        400: error('The body is not JSON or not a valid user, or its user_id differs from the path'),
        ...refusals,
        ...sqlOnly,
        ...notJson,
      },
    }),
    route({
      method: 'put',
      path: '/admin/users/{userid}/consents',
      summary: 'Replace a user’s consents (types not listed are opted out)',
      parameters: [userParam],
      request: { schema: adminConsentsSchema },
      responses: {
        200: { description: 'The consents now', schema: consentsAnswerSchema },
        400: error('The body is not JSON or not a valid consents list'),
        ...refusals,
        404: error('No such user'),
        ...sqlOnly,
        ...notJson,
      },
    }),
    route({
      method: 'put',
      path: '/admin/bonuses',
      summary: 'Replace the bonus list',
      request: { schema: adminBonusesSchema },
      responses: {
        200: { description: 'Stored', schema: bonusesLoadedAnswerSchema },
        400: error('The body is not JSON or not a valid bonus list (a value listed twice, say)'),
        ...refusals,
        ...sqlOnly,
        ...notJson,
      },
    }),
    route({
      method: 'get',
      path: '/admin/credits',
      summary: 'A user’s latest credits with their CRM references',
      parameters: [{ name: 'user_id', in: 'query', required: true, schema: z.string() }],
      responses: {
        200: { description: 'The credits', schema: creditsAnswerSchema },
        400: error('user_id is missing'),
        ...refusals,
      },
    }),
    route({
      method: 'post',
      path: '/admin/credits/replay',
      summary: 'Push dead-lettered credits to operator.credits.url again',
      request: { schema: creditReplaySchema },
      responses: {
        200: { description: 'How many are due again', schema: creditReplayAnswerSchema },
        400: error('The body is not JSON or a credit_id is not one'),
        ...refusals,
        ...notJson,
      },
    }),
  ];
}
