/**
 * GET /openapi.json and GET /docs. /docs is Swagger UI (swagger-ui-dist), its files served from node_modules by
 * this origin, never a CDN: the machines may have no network, and a CDN would be one more party able to run
 * script beside the admin API. The same reference, rendered here without script, sits in <noscript>.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Hono } from 'hono';
import { html } from 'hono/html';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { mountRoutes, route } from '../http/route-table.js';
import type { OpenApiDocument } from './openapi.js';

/**
 * The strict CSP of html-page.ts, relaxed only as far as Swagger UI needs: its scripts and stylesheet from this
 * origin, inline style attributes (React sets them), data: images (its icons), and fetches to this origin (the
 * document and "Try it out"). Still no inline script and no eval.
 */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** Starts Swagger UI on the page's #reference; a file of ours, so the page needs no inline script. */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, validatorUrl: null,
    docExpansion: 'list', defaultModelsExpandDepth: 0, tryItOutEnabled: false });
});
`;

/** The files the page loads, by the name it asks for: a fixed list, so no request names a path on disk. */
function loadAssets(): Map<string, { body: string; type: string }> {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  return new Map([
    ['swagger-ui.css', { body: readFileSync(join(dir, 'swagger-ui.css'), 'utf8'), type: 'text/css; charset=utf-8' }],
    ['swagger-ui-bundle.js', { body: readFileSync(join(dir, 'swagger-ui-bundle.js'), 'utf8'), type: 'text/javascript; charset=utf-8' }],
    ['init.js', { body: INIT_SCRIPT, type: 'text/javascript; charset=utf-8' }],
    ['page.css', { body: PAGE_STYLE, type: 'text/css; charset=utf-8' }],
  ]);
}

interface Operation {
  summary: string;
  description?: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required: boolean; description?: string; schema: unknown }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

function renderOperation(method: string, path: string, op: Operation) {
  const auth = op.security.length ? op.security.map((s) => Object.keys(s).join(' + ')).join(' or ') : 'none';
  return html`<section class="op" id="${method}-${path}">
  <h3><span class="method">${method}</span> <code>${path}</code> — ${op.summary}</h3>
  ${op.description ? html`<p>${op.description}</p>` : ''}
  <p class="muted">Authentication: ${auth}</p>
  ${
    op.parameters?.length
      ? html`<table><thead><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr></thead><tbody>
      ${op.parameters.map((p) => html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${JSON.stringify(p.schema)}</code></td></tr>`)}
      </tbody></table>`
      : ''
  }
  ${
    op.requestBody
      ? Object.entries(op.requestBody.content).map(([type, body]) => html`<p>Request body <code>${type}</code></p><pre>${pretty(body.schema)}</pre>`)
      : ''
  }
  <table><thead><tr><th>status</th><th>meaning</th><th>body</th></tr></thead><tbody>
  ${Object.entries(op.responses).map(
    ([status, r]) =>
      html`<tr><td>${status}</td><td style="text-align:left;white-space:normal">${r.description}</td><td style="text-align:left">${Object.keys(r.content ?? {}).join(', ')}</td></tr>`,
  )}
  </tbody></table>
  ${Object.entries(op.responses).flatMap(([status, r]) =>
    Object.entries(r.content ?? {}).map(
      ([type, body]) => html`<details><summary>${status} <code>${type}</code> schema</summary><pre>${pretty(body.schema)}</pre></details>`,
    ),
  )}
</section>`;
}

export function renderDocsBody(doc: OpenApiDocument) {
  const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, op: op as Operation })));
  return html`<p>${doc.info.description}</p>
<p>The same document as JSON: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${doc.openapi}). Every error body is <code>{"error": "…"}</code>.</p>
${doc.tags.map(
  ({ name }) => html`<h2>${name}</h2>
  ${operations.filter((o) => o.op.tags.includes(name)).map((o) => renderOperation(o.method, o.path, o.op))}`,
)}
<h2>Components</h2>
<pre>${pretty(doc.components)}</pre>`;
}

const PAGE_STYLE = `body { margin:0; font:14px/1.45 system-ui, sans-serif; color:#1d2733; } header { padding:.6rem 1rem; background:#1d2733; color:#fff; }
header a { color:#dfe8f1; } .swagger-ui .info { margin:20px 0; } noscript main { display:block; padding:0 1rem; max-width:1200px; }
noscript pre { overflow:auto; max-width:100%; } noscript table { display:block; overflow-x:auto; }`;

function renderPage(doc: OpenApiDocument) {
  const title = `${doc.info.title} ${doc.info.version} — API`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="stylesheet" href="/docs/assets/page.css">
<script src="/docs/assets/swagger-ui-bundle.js" defer></script>
<script src="/docs/assets/init.js" defer></script>
</head>
<body>
<header><a href="/console">Console</a> · <a href="/openapi.json">openapi.json</a></header>
<div id="reference"></div>
<noscript><main><h1>${title}</h1>${renderDocsBody(doc)}</main></noscript>
</body>
</html>`;
}

/**
 * `describe` runs on the first request for the document or the page, and Swagger UI's files (1.9 MB) are read on
 * the first request for them: a gateway that never serves its docs never holds them in memory.
 */
export function apiDocsRoutes(describe: () => OpenApiDocument) {
  const app = new Hono();
  let doc: OpenApiDocument | undefined;
  let json: string | undefined;
  let page: ReturnType<typeof renderPage> | undefined;
  let assets: ReturnType<typeof loadAssets> | undefined;
  const document = () => (doc ??= describe());

  mountRoutes(app, [
    route({
      method: 'get',
      path: '/openapi.json',
      doc: {
        tag: 'operations',
        summary: 'This document',
        responses: { 200: { description: 'OpenAPI 3.1', schema: z.record(z.string(), z.unknown()) } },
      },
      handlers: [(c) => c.body((json ??= JSON.stringify(document())), 200, { 'content-type': 'application/json' })],
    }),
    route({
      method: 'get',
      path: '/docs',
      doc: {
        tag: 'operations',
        summary: 'This document as a navigable reference (Swagger UI, served from this origin; a plain rendering without script in <noscript>)',
        responses: { 200: { description: 'HTML', contentType: 'text/html; charset=UTF-8', schema: z.string() } },
      },
      handlers: [
        async (c) => {
          c.header('Content-Security-Policy', DOCS_CSP);
          c.header('X-Content-Type-Options', 'nosniff');
          c.header('Referrer-Policy', 'no-referrer');
          c.header('Cache-Control', 'no-store');
          return c.html(await (page ??= renderPage(document())));
        },
      ],
    }),
    route({
      method: 'get',
      path: '/docs/assets/:name',
      doc: {
        tag: 'operations',
        summary: 'The files the /docs page loads (from the swagger-ui-dist package, and its start script)',
        parameters: [{ name: 'name', in: 'path', schema: z.enum(['swagger-ui.css', 'swagger-ui-bundle.js', 'init.js', 'page.css']) }],
        responses: {
          200: { description: 'The file', contentType: 'text/javascript; charset=utf-8', schema: z.string() },
          404: { description: 'No such file', schema: errorAnswerSchema },
        },
      },
      handlers: [
        (c) => {
          const asset = (assets ??= loadAssets()).get(c.req.param('name'));
          if (!asset) return c.json({ error: `no asset ${c.req.param('name').slice(0, 100)}`, code: 404 }, 404);
          c.header('X-Content-Type-Options', 'nosniff');
          // The files change only with the package version, which restarts the process.
          c.header('Cache-Control', 'public, max-age=3600');
          return c.body(asset.body, 200, { 'content-type': asset.type });
        },
      ],
    }),
  ]);
  return app;
}
