/**
 * Checks HTTP requests against a provider's own OpenAPI document (the provider's published contract is the contract,
 * not our fakes; docs/providers.md §8). `startValidatingProxy` sits between a plugin and a provider fake: every request is
 * matched to an operation of the document and its path, query and body are validated with Ajv against the
 * document's own schemas before the request goes on to the fake unchanged. The documents are the extracts in
 * test/fakes/openapi/ (their README says where each comes from and at which commit).
 */
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import { readBody, startFakeServer, type FakeServer } from './http.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = { [key: string]: Json };
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  operationId?: string;
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { required?: boolean; content: Record<string, { schema?: Schema }> };
}
export interface OpenApiDocument {
  openapi: string;
  servers?: Array<{ url: string }>;
  paths: Record<string, { parameters?: Array<Parameter | { $ref: string }>; servers?: Array<{ url: string }> } & Record<string, unknown>>;
  components?: Record<string, Record<string, Json>>;
}

/** One request as the document saw it: which operation, and what in it the document does not allow. */
export interface CheckedRequest {
  method: string;
  path: string;
  operationId: string | undefined;
  problems: string[];
}

// ajv-formats is CommonJS: imported from ESM its default may be the module object, whose own default is the plugin.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv) => Ajv;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

export function loadOpenApiExtract(name: string): OpenApiDocument {
  return JSON.parse(readFileSync(new URL(`./openapi/${name}.json`, import.meta.url), 'utf8')) as OpenApiDocument;
}

/** `#/components/...` as a JSON pointer into the document. */
function resolve(doc: OpenApiDocument, ref: string): unknown {
  let node: unknown = doc;
  for (const part of ref.replace(/^#\//, '').split('/')) node = (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return node;
}

function deref<T>(doc: OpenApiDocument, value: T | { $ref: string }): T {
  return value && typeof value === 'object' && '$ref' in value ? (resolve(doc, value.$ref) as T) : (value as T);
}

/** Every `format` used in the document that ajv-formats does not define passes (the documents' own names, such as `phone-number`). */
function collectFormats(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) for (const n of node) collectFormats(n, into);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'format' && typeof v === 'string') into.add(v);
      else collectFormats(v, into);
    }
  }
}

/**
 * The properties a schema names, through $ref, allOf, oneOf and anyOf; `undefined` when it lets any property in
 * (no `properties`, or `additionalProperties` allowed explicitly).
 */
function knownProperties(doc: OpenApiDocument, schema: Schema | undefined, seen = new Set<unknown>()): Map<string, Schema> | undefined {
  if (!schema || seen.has(schema)) return new Map();
  seen.add(schema);
  const s = deref<Schema>(doc, schema as Schema & { $ref: string });
  if (s.additionalProperties === true || (s.additionalProperties && typeof s.additionalProperties === 'object')) return undefined;
  const out = new Map<string, Schema>();
  let open = !s.properties && !s.allOf && !s.oneOf && !s.anyOf;
  for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) out.set(k, v);
  for (const key of ['allOf', 'oneOf', 'anyOf'] as const) {
    for (const sub of (s[key] ?? []) as Schema[]) {
      const inner = knownProperties(doc, sub, seen);
      if (inner === undefined) open = true;
      else for (const [k, v] of inner) out.set(k, v);
    }
  }
  return open ? undefined : out;
}

/** Names of body properties the document does not define anywhere (a schema validator lets them through silently). */
function unknownProperties(doc: OpenApiDocument, value: unknown, schema: Schema | undefined, at: string): string[] {
  if (!schema) return [];
  const s = deref<Schema>(doc, schema as Schema & { $ref: string });
  if (Array.isArray(value)) return value.flatMap((v, i) => unknownProperties(doc, v, s.items as Schema | undefined, `${at}[${i}]`));
  if (!value || typeof value !== 'object') return [];
  const known = knownProperties(doc, s);
  if (!known) return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
    known.has(k) ? unknownProperties(doc, v, known.get(k), `${at}.${k}`) : [`${at}.${k} is not in the document`],
  );
}

/** Ajv's errors as text; a parameter is validated as `{v: value}`, so its `/v` is dropped. */
const describe = (errors: ErrorObject[] | null | undefined, where: string, holder = false) =>
  (errors ?? []).map(
    (e) =>
      `${where}${holder ? e.instancePath.replace(/^\/v/, '') : e.instancePath} ${e.message ?? 'is invalid'}${e.params && 'allowedValues' in e.params ? ` (${JSON.stringify(e.params.allowedValues)})` : ''}`,
  );

/** Compiles a request checker for one document. */
export function openApiRequestChecker(doc: OpenApiDocument): (method: string, url: string, contentType: string | undefined, body: Buffer) => CheckedRequest {
  // $refs in the document point at `#/components/...`: the document is registered whole under an id, and each
  // schema compiled here refers into it.
  const id = 'openapi-document';
  const rebased = JSON.parse(JSON.stringify(doc).replace(/"\$ref":"#\//g, `"$ref":"${id}#/`)) as OpenApiDocument;
  const make = (coerce: boolean) => {
    const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, coerceTypes: coerce ? 'array' : false, discriminator: false });
    addFormats(ajv);
    const formats = new Set<string>();
    collectFormats(doc, formats);
    for (const f of formats) if (!ajv.formats[f]) ajv.addFormat(f, true);
    ajv.addSchema({ components: rebased.components ?? {} } as object, id);
    return ajv;
  };
  const strictAjv = make(false);
  const coercingAjv = make(true);
  const cache = new Map<unknown, ValidateFunction>();
  const compile = (schema: Schema, coerce: boolean): ValidateFunction => {
    const key = JSON.stringify([schema, coerce]);
    let fn = cache.get(key);
    if (!fn) {
      const body = JSON.parse(JSON.stringify(schema).replace(/"\$ref":"#\//g, `"$ref":"${id}#/`)) as Schema;
      fn = (coerce ? coercingAjv : strictAjv).compile(body);
      cache.set(key, fn);
    }
    return fn;
  };

  // Templates as regular expressions, with each path's server prefix (`https://rest.nexmo.com/sms` → `/sms`).
  const routes = Object.entries(doc.paths).flatMap(([template, item]) => {
    const server = (item.servers ?? doc.servers ?? [{ url: '' }])[0]!.url;
    const prefix = server ? new URL(server.replace(/\{[^}]+\}/g, 'x')).pathname.replace(/\/$/, '') : '';
    const names: string[] = [];
    const pattern = new RegExp(
      `^${(prefix + template).replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{([^}]+)\\?\}/g, (_m, name: string) => (names.push(name), '([^/]+)'))}$`,
    );
    return [{ template, item, pattern, names }];
  });
  // A literal path (`/batches/dry_run`) wins over a template (`/batches/{batch_id}`).
  routes.sort((a, b) => a.names.length - b.names.length);

  return (method, url, contentType, body) => {
    const parsed = new URL(url, 'http://x');
    const problems: string[] = [];
    const route = routes.find((r) => r.pattern.test(parsed.pathname) && METHODS.includes(method.toLowerCase()) && r.item[method.toLowerCase()]);
    if (!route) return { method, path: parsed.pathname, operationId: undefined, problems: [`${method} ${parsed.pathname}: no such operation in the document`] };
    const op = route.item[method.toLowerCase()] as Operation;
    const params = [...(route.item.parameters ?? []), ...(op.parameters ?? [])].map((p) => deref<Parameter>(doc, p));
    const values = route.pattern.exec(parsed.pathname)!.slice(1);
    for (const [i, name] of route.names.entries()) {
      const p = params.find((q) => q.in === 'path' && q.name === name);
      if (!p) problems.push(`path parameter ${name} is not described`);
      else if (p.schema) {
        const validate = compile({ type: 'object', properties: { v: p.schema } } as Schema, true);
        if (!validate({ v: decodeURIComponent(values[i]!) })) problems.push(...describe(validate.errors, `path ${name}`, true));
      }
    }
    const query = new Map<string, string[]>();
    for (const [k, v] of parsed.searchParams) query.set(k, [...(query.get(k) ?? []), v]);
    for (const p of params.filter((q) => q.in === 'query')) {
      const given = query.get(p.name);
      query.delete(p.name);
      if (!given) {
        if (p.required) problems.push(`query ${p.name} is required`);
        continue;
      }
      if (p.schema) {
        const holder: Record<string, unknown> = { v: p.schema.type === 'array' ? given : given[0] };
        const validate = compile({ type: 'object', properties: { v: p.schema } } as Schema, true);
        if (!validate(holder)) problems.push(...describe(validate.errors, `query ${p.name}`, true));
      }
    }
    for (const k of query.keys()) problems.push(`query ${k} is not a parameter of ${op.operationId ?? route.template}`);

    const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (op.requestBody) {
      const content = op.requestBody.content[media];
      if (body.length === 0) {
        if (op.requestBody.required) problems.push('a request body is required');
      } else if (!content) {
        problems.push(`content-type ${media || '(none)'} is not one the document lists (${Object.keys(op.requestBody.content).join(', ')})`);
      } else if (content.schema) {
        let value: unknown;
        const form = media === 'application/x-www-form-urlencoded';
        if (form) {
          const fields: Record<string, string | string[]> = {};
          for (const [k, v] of new URLSearchParams(body.toString('utf8'))) {
            const had = fields[k];
            fields[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
          }
          value = fields;
        } else {
          try {
            value = JSON.parse(body.toString('utf8'));
          } catch {
            problems.push('body is not JSON');
          }
        }
        if (value !== undefined) {
          const validate = compile(content.schema, form);
          if (!validate(value)) problems.push(...describe(validate.errors, 'body'));
          problems.push(...unknownProperties(doc, value, content.schema, 'body'));
        }
      }
    } else if (body.length > 0) problems.push('the document describes no request body for this operation');
    return { method, path: parsed.pathname, operationId: op.operationId, problems };
  };
}

/** What the document finds wrong in `value` as an instance of its component schema `name` (a callback body, say). */
export function openApiSchemaChecker(doc: OpenApiDocument, name: string): (value: unknown) => string[] {
  const check = openApiRequestChecker({
    openapi: doc.openapi,
    paths: { '/check': { post: { requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } } } } } },
    components: doc.components,
  });
  return (value) => check('POST', '/check', 'application/json', Buffer.from(JSON.stringify(value))).problems;
}

export interface ValidatingProxy extends FakeServer {
  /** Every request that went through, with what the document found wrong in it. */
  checked: CheckedRequest[];
}

/** A proxy on 127.0.0.1 that checks each request against `doc`, then forwards it unchanged to `target`. */
export async function startValidatingProxy(doc: OpenApiDocument, target: string): Promise<ValidatingProxy> {
  const check = openApiRequestChecker(doc);
  const checked: CheckedRequest[] = [];
  const to = new URL(target);
  const server = await startFakeServer(async (req, res) => {
    const body = await readBody(req);
    checked.push(check(req.method ?? 'GET', req.url ?? '/', req.headers['content-type'], body));
    await new Promise<void>((done, fail) => {
      const upstream = httpRequest(
        { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('end', () => done());
          answer.on('error', fail);
        },
      );
      upstream.on('error', (error) => {
        res.destroy();
        fail(error);
      });
      upstream.end(body);
    });
  });
  return { ...server, checked };
}
