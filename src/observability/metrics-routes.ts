/** GET /metrics: the gateway's Prometheus registry, behind admin.api_key unless metrics.public is on. */
import { Hono } from 'hono';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { mountRoutes, route, type ResponseDoc } from '../http/route-table.js';
import type { Registry } from 'prom-client';
import { requireAdmin } from '../auth/admin.js';

export interface MetricsRouteDeps {
  registry: Registry;
  adminKey: string | undefined;
  public: boolean;
}

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'admin.api_key is not set (and metrics.public is off)', schema: errorAnswerSchema },
};

export function metricsRoutes(deps: MetricsRouteDeps) {
  const app = new Hono();
  if (!deps.public) app.use('/metrics', requireAdmin(deps.adminKey));
  mountRoutes(app, [
    route({
      method: 'get',
      path: '/metrics',
      doc: {
        tag: 'operations',
        summary: 'Prometheus metrics (text exposition format)',
        description: deps.public ? 'Public: metrics.public is on.' : 'Behind admin.api_key unless metrics.public is on.',
        ...(deps.public ? {} : { security: ['adminBearer' as const] }),
        responses: {
          200: { description: 'Metrics', contentType: 'text/plain; version=0.0.4; charset=utf-8', schema: z.string() },
          ...(deps.public ? {} : adminRefusals),
        },
      },
      handlers: [async (c) => c.body(await deps.registry.metrics(), 200, { 'content-type': deps.registry.contentType })],
    }),
  ]);
  return app;
}
