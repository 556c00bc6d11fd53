/**
 * The shell of the console's HTML pages: server-rendered, self-contained (inline CSS, no scripts, nothing fetched
 * from elsewhere: the machines have no network), escaped by hono/html. /docs has a shell of its own
 * (observability/api-docs-routes.ts) because Swagger UI needs its scripts.
 */
import type { Context } from 'hono';
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** No scripts at all; forms may only post back here; nobody may frame the console (clickjacking). */
const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const STYLE = `
  :root { --ink:#1d2733; --muted:#5b6773; --line:#d8dee4; --bg:#f6f8fa; --accent:#0b5cad; }
  * { box-sizing: border-box; }
  html, body { max-width:100%; }
  body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--ink); background:#fff; }
  header { display:flex; flex-wrap:wrap; align-items:center; gap:.4rem 1.5rem; padding:.6rem 1rem; background:var(--ink); color:#fff; width:100%; }
  header h1 { font-size:1rem; margin:0; font-weight:600; }
  header nav a, header form button { color:#dfe8f1; text-decoration:none; background:none; border:0; font:inherit; cursor:pointer; padding:0; }
  main { padding:1rem 1rem 3rem; max-width:1200px; }
  h2 { font-size:1.1rem; margin:1.6rem 0 .6rem; overflow-wrap:anywhere; }
  h3 { font-size:.95rem; margin:1.2rem 0 .4rem; }
  .scroll { max-width:100%; overflow-x:auto; margin:.3rem 0 1rem; }
  table { border-collapse:collapse; margin:.3rem 0 1rem; }
  .scroll > table { margin:0; }
  th, td { border-bottom:1px solid var(--line); padding:.3rem .7rem; text-align:left; white-space:nowrap; vertical-align:top; }
  td.num, th.num, table[data-window] td, table[data-window] th, #outbox td, #outbox th, #crm-events td, #crm-events th { text-align:right; font-variant-numeric:tabular-nums; }
  table[data-window] th:first-child, table[data-window] td:first-child { text-align:left; }
  td.text { white-space:normal; min-width:12rem; }
  thead th { background:var(--bg); font-weight:600; }
  table.fields th { font-weight:600; color:var(--muted); }
  table.fields td { white-space:normal; overflow-wrap:anywhere; }
  pre { background:var(--bg); border:1px solid var(--line); padding:.6rem; overflow:auto; font-size:12px; max-height:28rem; max-width:100%; }
  code { font-size:12px; background:var(--bg); padding:0 .2rem; }
  .muted { color:var(--muted); }
  .notice { padding:.5rem .8rem; border-left:4px solid var(--accent); background:var(--bg); margin:.8rem 0; overflow-wrap:anywhere; }
  .error { border-left-color:#b42318; }
  form.inline { display:inline; }
  form.search { display:grid; grid-template-columns:repeat(auto-fill, minmax(14rem, 1fr)); gap:.5rem 1rem; align-items:end; }
  form.search label { display:flex; flex-direction:column; gap:.15rem; font-size:12px; color:var(--muted); }
  form.search p { margin:0; }
  input[type=text], input[type=password], input[type=search], input[type=datetime-local], select { font:inherit; color:var(--ink); padding:.35rem .5rem; border:1px solid var(--line); border-radius:4px; width:100%; max-width:24rem; background:#fff; }
  button { font:inherit; padding:.35rem .8rem; border:1px solid var(--accent); background:var(--accent); color:#fff; border-radius:4px; cursor:pointer; }
  button[disabled] { opacity:.5; cursor:default; }
  td button { padding:.1rem .5rem; }
  ol.timeline { list-style:none; padding:0; margin:.4rem 0 1rem; border-left:2px solid var(--line); }
  ol.timeline li { padding:.25rem 0 .45rem .8rem; overflow-wrap:anywhere; }
  ol.timeline time { font-variant-numeric:tabular-nums; color:var(--muted); }
  .kind { display:inline-block; min-width:5.5rem; font-weight:600; }
  .kind-receipt { color:#1a7f37; } .kind-webhook, .kind-conversion { color:#8250df; } .kind-timeout { color:#9a6700; } .kind-event { color:#bc4c00; }
  .op { border:1px solid var(--line); border-radius:6px; padding:.2rem 1rem .8rem; margin:1rem 0; }
  .method { display:inline-block; min-width:3.5rem; font-weight:700; text-transform:uppercase; }
  figure { margin:.5rem 0 1.2rem; max-width:100%; }
  figure svg { max-width:100%; height:auto; display:block; }
  svg.bar { vertical-align:middle; }
  .legend span { display:inline-block; margin-right:1rem; }
  .swatch { display:inline-block; width:.8rem; height:.8rem; margin-right:.3rem; vertical-align:-1px; }
`;

export function htmlPage(c: Context, page: { title: string; nav?: Html; body: Html; status?: 200 | 400 | 401 | 403 | 404 }) {
  c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  c.header('Cache-Control', 'no-store');
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Referrer-Policy', 'no-referrer');
  return c.html(
    html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title}</title>
<style>${raw(STYLE)}</style>
</head>
<body>
<header><h1>${page.title}</h1>${page.nav ?? ''}</header>
<main>${page.body}</main>
</body>
</html>`,
    page.status ?? 200,
  );
}
