/**
 * The OpenAPI 3.1 document, generated from the zod schemas the routes validate with (z.toJSONSchema), so the
 * document cannot drift from what the routes accept. Each area declares its routes with their docs in one table
 * (src/http/route-table.ts); app.ts hands the documented routes it mounted to buildOpenApiDocument(). A new way to
 * authenticate adds its name to SecurityName and its scheme to SECURITY_SCHEMES.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import type { DocumentedRoute, SecurityName } from '../http/route-table.js';

export const SECURITY_SCHEMES: Record<SecurityName, Record<string, unknown>> = {
  crmApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'sms.api_keys (falls back to auth.api_keys)' },
  adminBearer: { type: 'http', scheme: 'bearer', description: 'admin.api_key' },
  relayApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'relay.api_keys: the operator platform’s keys for /relay' },
  consoleSession: { type: 'apiKey', in: 'cookie', name: 'console_session', description: 'set by POST /console/login' },
  // The operator API's schemes, one per auth.mode; the document lists only the one the configured mode uses.
  operatorApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'auth.mode api_key: one of auth.api_keys' },
  operatorBasic: { type: 'http', scheme: 'basic', description: 'auth.mode basic: auth.basic.username and auth.basic.password' },
  operatorOAuth: {
    type: 'oauth2',
    description: 'auth.mode oauth: a Bearer access token (an HS256 JWT) from /oauth/token, client credentials from auth.oauth',
    flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: {} } },
  },
};
/** Listed under components only when some route uses them (the operator API uses the one of its auth.mode). */
const CONDITIONAL_SCHEMES: ReadonlySet<string> = new Set(['operatorApiKey', 'operatorBasic', 'operatorOAuth']);
/** Schemas shown once under components and referenced by name. */
const NAMED_SCHEMAS = new Map<z.ZodType, string>([[errorAnswerSchema, 'Error']]);

function plainJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  // `$schema` is implied: OpenAPI 3.1 schemas are JSON Schema 2020-12, which is zod's target.
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' });
  return rest;
}

function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const name = NAMED_SCHEMAS.get(schema);
  return name ? { $ref: `#/components/schemas/${name}` } : plainJsonSchema(schema, io);
}

function describeOperation(route: DocumentedRoute) {
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    const contentType = response.contentType ?? 'application/json';
    const headers: Record<string, unknown> = {
      'X-Request-Id': {
        description: 'The request id (the caller’s X-Request-Id, or a new one); log lines about this request carry it',
        schema: { type: 'string' },
      },
    };
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      headers[name] = { description: header.description, schema: toJsonSchema(header.schema, 'output') };
    }
    const body =
      response.schema || response.contentType ? { [contentType]: { schema: response.schema ? toJsonSchema(response.schema, 'output') : {} } } : undefined;
    responses[status] = { description: response.description, headers, ...(body ? { content: body } : {}) };
  }
  const requestBody = route.request && {
    required: true,
    ...(route.request.description ? { description: route.request.description } : {}),
    content: Object.fromEntries(
      (route.request.contentTypes ?? ['application/json']).map((type) => [type, { schema: toJsonSchema(route.request!.schema, 'input') }]),
    ),
  };
  return {
    operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security: route.security ? route.security.map((name) => ({ [name]: [] })) : [],
    ...(route.parameters?.length
      ? {
          parameters: route.parameters.map((p) => ({
            name: p.name,
            in: p.in,
            required: p.in === 'path' ? true : (p.required ?? false),
            ...(p.description ? { description: p.description } : {}),
            schema: toJsonSchema(p.schema, 'input'),
          })),
        }
      : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
}

export function buildOpenApiDocument(routes: readonly DocumentedRoute[], info: OpenApiInfo) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const item = (paths[route.path] ??= {});
    if (item[route.method]) throw new Error(`OpenAPI: ${route.method.toUpperCase()} ${route.path} is described twice`);
    item[route.method] = describeOperation(route);
  }
  const schemas = Object.fromEntries([...NAMED_SCHEMAS].map(([schema, name]) => [name, plainJsonSchema(schema, 'output')]));
  const used = new Set(routes.flatMap((r) => r.security ?? []));
  const securitySchemes = Object.fromEntries(
    Object.entries(SECURITY_SCHEMES).filter(([name]) => !CONDITIONAL_SCHEMES.has(name) || used.has(name as SecurityName)),
  );
  return {
    openapi: '3.1.0',
    info,
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: { securitySchemes, schemas },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;

/** The package's version for info.version, read once from the nearest package.json named crm-sms-gateway. */
export function readPackageVersion(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'crm-sms-gateway' && pkg.version) return pkg.version;
    }
    if (dirname(dir) === dir) return '0.0.0';
  }
}
