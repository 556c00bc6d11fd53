/**
 * The routes the gateway mounts and the operations /openapi.json documents are the same set, so the two cannot drift:
 * each route is declared once with its doc (src/http/route-table.ts) and the document is built from what is mounted.
 */
import { type Context, Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedRoutes, mountRoutes, route, undocumentedRoutes } from '../src/http/route-table.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/** Mounted on purpose without an operation in the document, each with the reason. */
const UNDOCUMENTED: Record<string, string> = {};

let plain: TestGateway;
let oauth: TestGateway;
let metricsPort: TestGateway;

beforeAll(async () => {
  plain = await startTestGateway({ relay: { api_keys: ['route-docs-key'] } });
  oauth = await startTestGateway({ auth: { mode: 'oauth', oauth: { client_id: 'route-docs', client_secret: 'route-docs-client-secret' } } });
  metricsPort = await startTestGateway({ metrics: { port: 0 } });
});
afterAll(async () => {
  await plain?.close();
  await oauth?.close();
  await metricsPort?.close();
});

/** `METHOD /path` of each mounted route (middleware, method ALL, left out), in OpenAPI's path syntax. */
function mounted(gw: TestGateway): string[] {
  const keys = gw.gateway.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  return [...new Set(keys)].sort();
}

async function documented(gw: TestGateway): Promise<string[]> {
  const doc = (await (await fetch(`${gw.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths)
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

describe('every mounted route is documented, and every documented route is mounted', () => {
  it.each([
    ['api_key mode, relay on', () => plain],
    ['oauth mode (/oauth/token)', () => oauth],
  ])('%s', async (_name, gw) => {
    const routes = mounted(gw());
    expect(routes.length).toBeGreaterThan(60);
    expect(await documented(gw())).toEqual(routes.filter((key) => !(key in UNDOCUMENTED)));
    expect(undocumentedRoutes(gw().gateway.routes)).toEqual(Object.keys(UNDOCUMENTED));
  });

  it('oauth mode mounts and documents /oauth/token; api_key mode neither', async () => {
    expect(mounted(oauth)).toEqual(expect.arrayContaining(['GET /oauth/token', 'POST /oauth/token']));
    expect(mounted(plain)).not.toContain('POST /oauth/token');
    expect(await documented(plain)).not.toContain('POST /oauth/token');
  });

  it('with metrics.port, /metrics is served on that port only and still documented', async () => {
    expect(mounted(metricsPort)).not.toContain('GET /metrics');
    expect(await documented(metricsPort)).toEqual([...mounted(metricsPort), 'GET /metrics'].sort());
    expect((await fetch(`${metricsPort.url}/metrics`)).status).toBe(404);
  });
});

describe('route tables (src/http/route-table.ts)', () => {
  const doc = (summary: string) => ({ summary, tag: 'test', responses: { 200: { description: 'ok' } } });

  it('keeps each doc with its route through app.route(), in OpenAPI path syntax, and names what has none', async () => {
    const area = new Hono();
    area.use('*', async (_c, next) => next());
    const answer = async (c: Context) => c.text('x');
    mountRoutes(area, [
      route({ method: 'get', path: '/things/:id', doc: doc('read'), handlers: [async (c) => c.text(c.req.param('id'))] }),
      route({ method: 'get', path: '/both', doc: doc('get both'), handlers: [answer] }),
      route({ method: 'post', path: '/both', doc: doc('post both'), handlers: [answer] }),
    ]);
    area.get('/forgotten', (c) => c.text('no doc'));
    const app = new Hono();
    app.route('/area', area);

    expect(documentedRoutes(app.routes).map((r) => `${r.method} ${r.path} ${r.summary}`)).toEqual([
      'get /area/things/{id} read',
      'get /area/both get both',
      'post /area/both post both',
    ]);
    expect(undocumentedRoutes(app.routes)).toEqual(['GET /area/forgotten']);
    expect(await (await app.request('/area/things/42')).text()).toBe('42');
  });
});
