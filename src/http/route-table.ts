/**
 * A route and its documentation in one place. Each area declares its routes as a table of `{ method, path, doc,
 * handlers }` and registers it with mountRoutes(); the OpenAPI document (src/observability/openapi.ts) is built from
 * the routes the app really mounted (documentedRoutes(app.routes)), so a route cannot be mounted undocumented or
 * documented unmounted without test/route-docs.test.ts noticing. Requests are parsed by the handlers themselves
 * (src/http/json-body.ts): the doc's schemas describe, they never validate a second time.
 */
import type { Handler, Hono, MiddlewareHandler } from 'hono';
import type { z } from 'zod';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The authentication schemes of the document (their definitions: SECURITY_SCHEMES in src/observability/openapi.ts). */
export type SecurityName = 'crmApiKey' | 'adminBearer' | 'relayApiKey' | 'consoleSession' | 'operatorApiKey' | 'operatorBasic' | 'operatorOAuth';

export interface ParameterDoc {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  description?: string;
  schema: z.ZodType;
}

export interface ResponseDoc {
  description: string;
  /** JSON body schema; for other content types give `contentType` (and optionally a schema of the text). */
  schema?: z.ZodType;
  contentType?: string;
  headers?: Record<string, { description: string; schema: z.ZodType }>;
}

/** `answers` for a method that carries a body (post, put, patch), none for the others: a route shared by GET and POST. */
export function bodyAnswers(method: string, answers: Record<number, ResponseDoc>): Record<number, ResponseDoc> {
  return method === 'get' || method === 'delete' || method === 'head' ? {} : answers;
}

/** What the document says about one operation; its method and path are the route's own. */
export interface RouteDoc {
  summary: string;
  description?: string;
  tag: string;
  /** Any one of these authenticates the request; omitted means public. */
  security?: SecurityName[];
  parameters?: ParameterDoc[];
  request?: { schema: z.ZodType; contentTypes?: string[]; description?: string };
  responses: Record<number, ResponseDoc>;
}

export interface Route<P extends string = string> {
  method: HttpMethod;
  /** Hono's path (`/:provider`), relative to where the table's app is mounted; the document writes `/{provider}`. */
  path: P;
  doc: RouteDoc;
  /** Route-level middleware first, the handler that answers last. */
  handlers: readonly [...MiddlewareHandler<any, NoInfer<P>>[], Handler<any, NoInfer<P>>];
}

/** A route ready to mount: what route() returns, whatever its path. */
export interface MountableRoute {
  readonly method: HttpMethod;
  readonly path: string;
  readonly doc: RouteDoc;
  readonly handlers: readonly Handler[];
}

/**
 * Each entry's handlers know its path's parameters (`c.req.param('provider')` is a string). The answer does not
 * name the path's type, so the table around the call cannot widen it to `string`.
 */
export function route<P extends string>(entry: Route<P>): MountableRoute {
  return entry as unknown as MountableRoute;
}

/** A mounted, documented operation: the full OpenAPI path. */
export type DocumentedRoute = RouteDoc & { method: HttpMethod; path: string };

/** The doc of each mounted handler, by method: Hono keeps a sub-app's handler functions when app.route() mounts it. */
const docs = new WeakMap<object, Map<string, RouteDoc>>();

/** Hono's `/:provider` as OpenAPI's `/{provider}`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

export function mountRoutes(app: Hono, routes: readonly MountableRoute[]): void {
  for (const route of routes) {
    const answer = route.handlers[route.handlers.length - 1]!;
    const byMethod = docs.get(answer) ?? new Map<string, RouteDoc>();
    byMethod.set(route.method.toUpperCase(), route.doc);
    docs.set(answer, byMethod);
    app.on(route.method.toUpperCase(), route.path, ...(route.handlers as [Handler, ...Handler[]]));
  }
}

/** The documented operations among an app's mounted routes (`app.routes`), in mounting order. */
export function documentedRoutes(mounted: Hono['routes']): DocumentedRoute[] {
  const found: DocumentedRoute[] = [];
  for (const { method, path, handler } of mounted) {
    const doc = docs.get(handler)?.get(method);
    if (doc) found.push({ ...doc, method: method.toLowerCase() as HttpMethod, path: openApiPath(path) });
  }
  return found;
}

/** `METHOD /path` of every mounted route (not middleware) that no table documents. */
export function undocumentedRoutes(mounted: Hono['routes']): string[] {
  const documented = new Set(documentedRoutes(mounted).map((r) => `${r.method.toUpperCase()} ${r.path}`));
  const all = mounted.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${openApiPath(r.path)}`);
  return [...new Set(all)].filter((key) => !documented.has(key));
}
