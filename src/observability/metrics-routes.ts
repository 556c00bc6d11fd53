/** GET /metrics: the gateway's Prometheus registry, behind admin.api_key unless metrics.public is on. */
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import { requireAdmin } from '../auth/admin.js';

export interface MetricsRouteDeps {
  registry: Registry;
  adminKey: string | undefined;
  public: boolean;
}

export function metricsRoutes(deps: MetricsRouteDeps) {
  const app = new Hono();
  if (!deps.public) app.use('/metrics', requireAdmin(deps.adminKey));
  app.get('/metrics', async (c) => c.body(await deps.registry.metrics(), 200, { 'content-type': deps.registry.contentType }));
  return app;
}
