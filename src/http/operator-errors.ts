/**
 * Error answers of the operator API, in the CRM's shape `{"error": string, "code": integer}` and nothing else
 * (docs/operator-api.md "Errors"). One middleware, outermost, so every error on those paths gets the shape
 * whoever answered it: a route, auth (401), the failure limit (429), the body limit (413), no route (404/405) or
 * the unhandled-error handler (500). Only error answers are read again, so successful answers cost nothing.
 */
import type { MiddlewareHandler } from 'hono';
import { crmErrorSchema } from '../crm/contract.js';
import type { ResponseDoc } from './route-table.js';

/** The paths the CRM calls (docs/operator-api.md); /admin and the SMS channel keep their own answers. */
const OPERATOR_PATHS = [
  /^\/userdetails\//,
  /^\/userconsents\//,
  /^\/userblocks\//,
  /^\/bonus\//,
  /^\/reconciliation(\/|$)/,
  /^\/authenticate$/,
  /^\/oauth\/token$/,
];
const CREDIT_PATHS = new Set(['/bonus/credit', '/bonus/credit/funds']);

/** An error answer of the operator API as the OpenAPI document describes it: the CRM's shape. */
export const crmError = (description: string): ResponseDoc => ({ description, schema: crmErrorSchema });

export function isOperatorPath(path: string): boolean {
  return OPERATOR_PATHS.some((p) => p.test(path));
}

/**
 * The status to answer and the code to carry, for an error `status` on `path`. The credit endpoints answer only
 * what the interface names (docs/operator-api.md "Credit answers"): 400 when the request can never succeed, 500
 * for whatever a retry may fix; 401 and 429 stay as they are, and `code` keeps the finer status (404 for an unknown
 * user, 503 for a twin being credited now). POST /authenticate answers 401 for everything but a valid session.
 * Elsewhere the code is the status.
 */
export function decideOperatorError(path: string, status: number): { status: number; code: number } {
  if (status === 429) return { status, code: status };
  // POST /authenticate: any answer but 200 {"user_id"} is a 401; code says whether the session or the check failed.
  if (path === '/authenticate') return { status: 401, code: status };
  if (!CREDIT_PATHS.has(path) || status === 401) return { status, code: status };
  if (status >= 400 && status <= 499) return { status: 400, code: status };
  return { status: 500, code: status };
}

export function operatorErrorShape(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const res = c.res;
    if (res.status < 400 || !isOperatorPath(c.req.path)) return;
    let body: unknown;
    try {
      body = await res.clone().json();
    } catch {
      body = undefined;
    }
    const message =
      body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : `HTTP ${res.status}`;
    const decided = decideOperatorError(c.req.path, res.status);
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    headers.set('content-type', 'application/json; charset=UTF-8');
    // Assigning undefined first drops Hono's copy of the old headers, which would bring the old length back.
    c.res = undefined as unknown as Response;
    c.res = new Response(JSON.stringify({ error: message, code: decided.code }), { status: decided.status, headers });
  };
}
