/** OpenAPI description of the console's page and form posts (for completeness: people use it through a browser). */
import { z } from 'zod';
import { describeRoute, type ResponseDoc } from '../observability/openapi.js';
import { EVENT_TYPES } from '../events/event-query.js';
import { csrfFormSchema, loginFormSchema } from './routes.js';

const field = (description: string) => z.string().max(256).describe(description);
/** What the replay form posts: the CSRF token and which dead letters (console/dead-letters-page.ts). */
const replayFormSchema = csrfFormSchema.extend({
  only: z
    .string()
    .regex(/^[0-9]{1,15}$/)
    .optional()
    .describe('The one conversion whose Replay button was pressed'),
  action: z
    .enum(['selected', 'matching'])
    .optional()
    .describe('selected: the ticked ids; matching (or absent): every dead letter matching provider and status'),
  ids: z
    .array(z.string().regex(/^[0-9]{1,15}$/))
    .optional()
    .describe('Ticked conversion ids'),
  provider: field('Filter of the list').optional(),
  status: z.enum(['', 'delivered', 'undelivered', 'failed', 'delivery_unknown']).optional(),
});
/** What the dead-event replay form posts (console/dead-events-page.ts). */
const eventReplayFormSchema = csrfFormSchema.extend({
  only: z.string().uuid().optional().describe('The one event whose Replay button was pressed'),
  action: z
    .enum(['selected', 'matching'])
    .optional()
    .describe('selected: the ticked ids; matching: every dead event matching type and user_id (required unless only is given)'),
  ids: z.array(z.string().uuid()).optional().describe('Ticked event ids'),
  type: z
    .enum(['', ...EVENT_TYPES] as [string, ...string[]])
    .optional()
    .describe('Filter of the list'),
  user_id: field('Filter of the list').optional(),
});
/** What the dead-credit replay form posts (console/dead-credits-page.ts). */
const creditReplayFormSchema = csrfFormSchema.extend({
  only: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/)
    .optional()
    .describe('The one credit (credit_id) whose Replay button was pressed'),
  action: z
    .enum(['selected', 'matching'])
    .optional()
    .describe('selected: the ticked ids; matching: every dead credit of user_id, or every dead credit (required unless only is given)'),
  ids: z
    .array(z.string().regex(/^[1-9][0-9]{0,14}$/))
    .optional()
    .describe('Ticked credit_ids'),
  user_id: field('Filter of the list').optional(),
});
const searchField = (name: string, description: string) => ({ name, in: 'query' as const, description, schema: field(description) });

const page = (description: string): ResponseDoc => ({ description, contentType: 'text/html; charset=UTF-8', schema: z.string() });
const backToConsole: ResponseDoc = { description: 'Done; back to the console', headers: { Location: { description: '/console…', schema: z.string() } } };
const form = 'application/x-www-form-urlencoded';
const disabled = page('The console is disabled (admin.api_key is not set)');

export const consoleRouteDocs = [
  describeRoute({
    method: 'get',
    path: '/console',
    tag: 'console',
    summary: 'The console: the sign-in form without a session; with one, message search, totals, charts and the outbox',
    description: 'The search takes the parameters of GET /admin/messages; empty ones are ignored (the form sends every field).',
    parameters: [
      searchField('recipient', 'Phone number, E.164 or national'),
      searchField('user_id', 'activity.user_id'),
      searchField('activity_id', 'activity.id'),
      searchField('sms_id', 'sms_id'),
      searchField('provider', 'Provider name'),
      searchField('status', 'A status word of GET /admin/messages'),
      searchField('from', 'Created at or after (UTC)'),
      searchField('to', 'Created before (UTC)'),
      searchField('cursor', 'The next page'),
    ],
    responses: {
      200: page('The console page, or the sign-in form'),
      400: page('The console page with the search parameter named that is not valid'),
      403: disabled,
    },
  }),
  describeRoute({
    method: 'get',
    path: '/console/messages/{smsId}',
    tag: 'console',
    summary: 'One message: its fields and a timeline of its send, receipts and conversions',
    security: ['consoleSession'],
    parameters: [
      { name: 'smsId', in: 'path', schema: z.string() },
      { name: 'recipient', in: 'query', description: 'The number searched for: shown unmasked when it is this message’s', schema: field('phone number') },
    ],
    responses: { 200: page('The message page'), 401: page('No valid session: the sign-in form'), 403: disabled, 404: page('No message with this sms_id') },
  }),
  describeRoute({
    method: 'get',
    path: '/console/dead-letters',
    tag: 'console',
    summary: 'Dead-lettered conversions with reasons, attempts, last answers and ages, and replay buttons',
    security: ['consoleSession'],
    parameters: [searchField('provider', 'Provider name'), searchField('status', 'Delivery status reported'), searchField('cursor', 'The next page')],
    responses: { 200: page('The dead-letter list'), 400: page('A filter is not valid'), 401: page('No valid session: the sign-in form'), 403: disabled },
  }),
  describeRoute({
    method: 'get',
    path: '/console/dead-events',
    tag: 'console',
    summary: 'Dead-lettered CRM events with type, user, attempts, the CRM’s last answer and age, and replay buttons',
    security: ['consoleSession'],
    parameters: [
      { name: 'type', in: 'query', description: 'CRM queue type', schema: z.enum(['', ...EVENT_TYPES] as [string, ...string[]]) },
      searchField('user_id', 'The player'),
      { name: 'cursor', in: 'query', description: 'The next page', schema: z.string().regex(/^[0-9]{0,15}$/) },
    ],
    responses: {
      200: page('The dead-event list'),
      400: page('A filter is not valid (named on the page)'),
      401: page('No valid session: the sign-in form'),
      403: disabled,
    },
  }),
  describeRoute({
    method: 'post',
    path: '/console/events/replay',
    tag: 'console',
    summary: 'Make dead CRM events due again: one, the ticked ones, or all matching the filter',
    security: ['consoleSession'],
    request: { schema: eventReplayFormSchema, contentTypes: [form] },
    responses: {
      303: { description: 'Done; back to the dead events', headers: { Location: { description: '/console/dead-events?replayed=N', schema: z.string() } } },
      400: page('The form names no valid dead events'),
      401: page('No valid session'),
      403: page('CSRF token missing or wrong, or the console is disabled'),
    },
  }),
  describeRoute({
    method: 'get',
    path: '/console/dead-credits',
    tag: 'console',
    summary:
      'Dead-lettered credits (sql backend, operator.credits.url) with user, bonus code, amount, attempts, the operator’s last answer and age, and replay buttons',
    security: ['consoleSession'],
    parameters: [
      searchField('user_id', 'The player'),
      { name: 'cursor', in: 'query', description: 'The next page', schema: z.string().regex(/^[0-9]{0,15}$/) },
    ],
    responses: {
      200: page('The dead-credit list'),
      400: page('A filter is not valid (named on the page)'),
      401: page('No valid session: the sign-in form'),
      403: disabled,
    },
  }),
  describeRoute({
    method: 'post',
    path: '/console/credits/replay',
    tag: 'console',
    summary: 'Make dead credits due again for operator.credits.url: one, the ticked ones, or all of the filter',
    security: ['consoleSession'],
    request: { schema: creditReplayFormSchema, contentTypes: [form] },
    responses: {
      303: { description: 'Done; back to the dead credits', headers: { Location: { description: '/console/dead-credits?replayed=N', schema: z.string() } } },
      400: page('The form names no valid dead credits'),
      401: page('No valid session'),
      403: page('CSRF token missing or wrong, or the console is disabled'),
    },
  }),
  describeRoute({
    method: 'post',
    path: '/console/login',
    tag: 'console',
    summary: 'Exchange the admin key for a session cookie (HttpOnly, SameSite=Strict)',
    request: { schema: loginFormSchema, contentTypes: [form] },
    responses: { 303: backToConsole, 401: page('Not the admin key'), 403: disabled },
  }),
  describeRoute({
    method: 'post',
    path: '/console/replay',
    tag: 'console',
    summary: 'Make dead-lettered conversions due again: one, the ticked ones, or all matching the filter',
    security: ['consoleSession'],
    request: { schema: replayFormSchema, contentTypes: [form] },
    responses: {
      303: backToConsole,
      400: page('The form names no valid dead letters'),
      401: page('No valid session'),
      403: page('CSRF token missing or wrong, or the console is disabled'),
    },
  }),
  describeRoute({
    method: 'post',
    path: '/console/logout',
    tag: 'console',
    summary: 'End the session',
    security: ['consoleSession'],
    request: { schema: csrfFormSchema, contentTypes: [form] },
    responses: { 303: backToConsole, 401: page('No valid session'), 403: page('CSRF token missing or wrong, or the console is disabled') },
  }),
];
