/** OpenAPI description of the console's page and form posts (for completeness: people use it through a browser). */
import { z } from 'zod';
import { describeRoute, type ResponseDoc } from '../observability/openapi.js';
import { csrfFormSchema, loginFormSchema } from './routes.js';

const page = (description: string): ResponseDoc => ({ description, contentType: 'text/html; charset=UTF-8', schema: z.string() });
const backToConsole: ResponseDoc = { description: 'Done; back to the console', headers: { Location: { description: '/console…', schema: z.string() } } };
const form = 'application/x-www-form-urlencoded';
const disabled = page('The console is disabled (admin.api_key is not set)');

export const consoleRouteDocs = [
  describeRoute({
    method: 'get',
    path: '/console',
    tag: 'console',
    summary: 'The console: the sign-in form, or totals, charts, outbox and search when signed in',
    security: ['consoleSession'],
    parameters: [{ name: 'q', in: 'query', description: 'activity.id or sms_id to look up', schema: z.string() }],
    responses: { 200: page('The console page'), 403: disabled },
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
    summary: 'Make every dead-lettered conversion due again',
    security: ['consoleSession'],
    request: { schema: csrfFormSchema, contentTypes: [form] },
    responses: { 303: backToConsole, 401: page('No valid session'), 403: page('CSRF token missing or wrong, or the console is disabled') },
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
