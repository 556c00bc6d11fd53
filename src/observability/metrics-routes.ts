/** GET /metrics: the gateway's Prometheus registry, behind admin.api_key unless metrics.public is on. */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { requireAdmin } from '../auth/admin.js';

export interface MetricsRouteDeps {
  registry: Registry;
  /** The exposition text; defaults to this registry's (a cluster worker asks the primary for every worker's). */
  render?: () => Promise<string>;
  adminKey: string | undefined;
  public: boolean;
}

export function metricsRoutes(deps: MetricsRouteDeps) {
  const app = new Hono();
  if (!deps.public) app.use('/metrics', requireAdmin(deps.adminKey));
  const render = deps.render ?? (() => deps.registry.metrics());
  app.get('/metrics', async (c) => c.body(await render(), 200, { 'content-type': deps.registry.contentType }));
  return app;
}
