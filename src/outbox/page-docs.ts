/** The pieces of the console routes' OpenAPI documentation that every console page and form shares. */
import { z } from 'zod';
import type { ResponseDoc } from '../http/route-table.js';

export const loginFormSchema = z.object({ key: z.string().describe('admin.api_key') });
export const csrfFormSchema = z.object({ csrf: z.string().describe('The token in the console’s forms') });

export const field = (description: string) => z.string().max(256).describe(description);
export const searchField = (name: string, description: string) => ({ name, in: 'query' as const, description, schema: field(description) });
export const cursorField = { name: 'cursor', in: 'query' as const, description: 'The next page', schema: z.string().regex(/^[0-9]{0,15}$/) };

export const page = (description: string): ResponseDoc => ({ description, contentType: 'text/html; charset=UTF-8', schema: z.string() });
export const backToConsole: ResponseDoc = { description: 'Done; back to the console', headers: { Location: { description: '/console…', schema: z.string() } } };
export const formContentType = 'application/x-www-form-urlencoded';
export const disabled = page('The console is disabled (admin.api_key is not set)');

/** A dead list's page: its answers (the list, a filter named as not valid, the sign-in form, the console disabled). */
export const deadListAnswers = (list: string) => ({
  200: page(`The ${list} list`),
  400: page('A filter is not valid (named on the page)'),
  401: page('No valid session: the sign-in form'),
  403: disabled,
});

/** A dead list's replay post: its answers besides the 303 back to the list. */
export const replayRefusals = (rows: string) => ({
  400: page(`The form names no valid ${rows}`),
  401: page('No valid session'),
  403: page('CSRF token missing or wrong, or the console is disabled'),
});
