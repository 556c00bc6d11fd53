/**
 * GET /openapi.json and GET /docs. The page is rendered here from the same document (no Swagger UI: that would
 * mean scripts from a CDN, and the machines have no network), one section per operation.
 */
import { Hono } from 'hono';
import { html } from 'hono/html';
import { htmlPage } from '../http/html-page.js';
import type { OpenApiDocument } from './openapi.js';

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
  ${op.parameters?.length
    ? html`<table><thead><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr></thead><tbody>
      ${op.parameters.map((p) => html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${JSON.stringify(p.schema)}</code></td></tr>`)}
      </tbody></table>`
    : ''}
  ${op.requestBody
    ? Object.entries(op.requestBody.content).map(([type, body]) => html`<p>Request body <code>${type}</code></p><pre>${pretty(body.schema)}</pre>`)
    : ''}
  <table><thead><tr><th>status</th><th>meaning</th><th>body</th></tr></thead><tbody>
  ${Object.entries(op.responses).map(
    ([status, r]) => html`<tr><td>${status}</td><td style="text-align:left;white-space:normal">${r.description}</td><td style="text-align:left">${Object.keys(r.content ?? {}).join(', ')}</td></tr>`,
  )}
  </tbody></table>
  ${Object.entries(op.responses).flatMap(([status, r]) =>
    Object.entries(r.content ?? {}).map(([type, body]) => html`<details><summary>${status} <code>${type}</code> schema</summary><pre>${pretty(body.schema)}</pre></details>`),
  )}
</section>`;
}

export function renderDocsBody(doc: OpenApiDocument) {
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method, path, op: op as Operation })),
  );
  return html`<p>${doc.info.description}</p>
<p>The same document as JSON: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${doc.openapi}). Every error body is <code>{"error": "…"}</code>.</p>
${doc.tags.map(
  ({ name }) => html`<h2>${name}</h2>
  ${operations.filter((o) => o.op.tags.includes(name)).map((o) => renderOperation(o.method, o.path, o.op))}`,
)}
<h2>Components</h2>
<pre>${pretty(doc.components)}</pre>`;
}

export function apiDocsRoutes(doc: OpenApiDocument) {
  const app = new Hono();
  const json = JSON.stringify(doc);
  app.get('/openapi.json', (c) => c.body(json, 200, { 'content-type': 'application/json' }));
  app.get('/docs', (c) => htmlPage(c, { title: `${doc.info.title} ${doc.info.version} — API`, body: renderDocsBody(doc) }));
  return app;
}
