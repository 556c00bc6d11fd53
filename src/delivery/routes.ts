/** /dlr/{provider}: verify and parse with the provider's plugin, store, answer 2xx quickly (providers retry otherwise). */
import { Hono } from 'hono';
import type { Logger } from 'pino';
import { requestLogger } from '../observability/request-context.js';
import type { ProviderRouter } from '../sms/provider-router.js';
import type { IngestSummary, ReceiptInput } from './ingest.js';

export interface ReceiptRouteDeps {
  router: ProviderRouter;
  /** Base of the URLs we handed to providers; signatures are checked against it, never against the Host header. */
  publicUrl: () => string;
  ingest: (inputs: ReceiptInput[]) => Promise<IngestSummary>;
  logger: Logger;
}

export function receiptRoutes(deps: ReceiptRouteDeps) {
  const app = new Hono();
  app.on(['GET', 'POST'], '/:provider', async (c) => {
    const name = c.req.param('provider');
    const provider = deps.router.byName(name);
    if (!provider) return c.json({ error: `provider ${JSON.stringify(name)} is not configured` }, 404);
    const url = new URL(c.req.url);
    // Object.fromEntries makes every header an own key, whatever its name (a header may be called `__proto__`).
    const headers: Record<string, string> = Object.fromEntries(c.req.raw.headers.entries());
    const parsed = await provider.parseReceipt({
      method: c.req.method,
      publicUrl: `${deps.publicUrl()}/dlr/${encodeURIComponent(name)}${url.search}`,
      query: Object.fromEntries(url.searchParams),
      headers,
      contentType: c.req.header('content-type') ?? '',
      rawBody: Buffer.from(await c.req.arrayBuffer()),
    });
    if (!parsed.ok) {
      requestLogger(c, deps.logger).warn({ provider: name, reason: parsed.reason }, 'receipt refused');
      return c.json({ error: `receipt refused: ${parsed.reason}` }, 403);
    }
    // Answer only after the events are committed: a provider that got its 2xx will not send them again.
    await deps.ingest(parsed.events.map((event) => ({ provider: name, event, requestId: c.get('requestId') })));
    return c.json({ received: parsed.events.length }, 200);
  });
  return app;
}
