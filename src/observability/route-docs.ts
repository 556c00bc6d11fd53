/** OpenAPI description of the operations endpoints: health, metrics and the API documents themselves. */
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { describeRoute, type ResponseDoc } from './openapi.js';

const adminRefusals: Record<number, ResponseDoc> = {
  401: { description: 'Bearer token missing or not admin.api_key', schema: errorAnswerSchema },
  403: { description: 'admin.api_key is not set (and metrics.public is off)', schema: errorAnswerSchema },
};

export function opsRouteDocs(options: { metricsPublic: boolean }) {
  return [
    describeRoute({
      method: 'get',
      path: '/healthz',
      tag: 'operations',
      summary: 'The process answers',
      responses: { 200: { description: 'Alive', schema: z.strictObject({ status: z.literal('ok') }) } },
    }),
    describeRoute({
      method: 'get',
      path: '/readyz',
      tag: 'operations',
      summary: 'The process and its ledger database answer',
      responses: {
        200: { description: 'Ready', schema: z.strictObject({ status: z.literal('ready') }) },
        503: { description: 'The database does not answer', schema: errorAnswerSchema },
      },
    }),
    describeRoute({
      method: 'get',
      path: '/metrics',
      tag: 'operations',
      summary: 'Prometheus metrics (text exposition format)',
      description: options.metricsPublic ? 'Public: metrics.public is on.' : 'Behind admin.api_key unless metrics.public is on.',
      ...(options.metricsPublic ? {} : { security: ['adminBearer' as const] }),
      responses: {
        200: { description: 'Metrics', contentType: 'text/plain; version=0.0.4; charset=utf-8', schema: z.string() },
        ...(options.metricsPublic ? {} : adminRefusals),
      },
    }),
    describeRoute({
      method: 'get',
      path: '/openapi.json',
      tag: 'operations',
      summary: 'This document',
      responses: { 200: { description: 'OpenAPI 3.1', schema: z.record(z.string(), z.unknown()) } },
    }),
    describeRoute({
      method: 'get',
      path: '/docs',
      tag: 'operations',
      summary: 'This document as a navigable reference (Swagger UI, served from this origin; a plain rendering without script in <noscript>)',
      responses: { 200: { description: 'HTML', contentType: 'text/html; charset=UTF-8', schema: z.string() } },
    }),
    describeRoute({
      method: 'get',
      path: '/docs/assets/{name}',
      tag: 'operations',
      summary: 'The files the /docs page loads (from the swagger-ui-dist package, and its start script)',
      parameters: [{ name: 'name', in: 'path', schema: z.enum(['swagger-ui.css', 'swagger-ui-bundle.js', 'init.js', 'page.css']) }],
      responses: {
        200: { description: 'The file', contentType: 'text/javascript; charset=utf-8', schema: z.string() },
        404: { description: 'No such file', schema: errorAnswerSchema },
      },
    }),
  ];
}
