/** /healthz: the process answers. /readyz: the ledger answers too (load balancers stop routing when it does not). */
import { Hono } from 'hono';
import { z } from 'zod';
import { errorAnswerSchema } from '../http/error-answer.js';
import { mountRoutes, route } from '../http/route-table.js';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { pingDatabase } from '../ledger/engine/db.js';
import { requestLogger } from './request-context.js';

export function healthRoutes(db: Kysely<any>, logger?: Logger) {
  const app = new Hono();
  mountRoutes(app, [
    route({
      method: 'get',
      path: '/healthz',
      doc: {
        tag: 'operations',
        summary: 'The process answers',
        responses: { 200: { description: 'Alive', schema: z.strictObject({ status: z.literal('ok') }) } },
      },
      handlers: [(c) => c.json({ status: 'ok' })],
    }),
    route({
      method: 'get',
      path: '/readyz',
      doc: {
        tag: 'operations',
        summary: 'The process and its ledger database answer',
        responses: {
          200: { description: 'Ready', schema: z.strictObject({ status: z.literal('ready') }) },
          503: { description: 'The database does not answer', schema: errorAnswerSchema },
        },
      },
      handlers: [
        async (c) => {
          try {
            await pingDatabase(db);
            return c.json({ status: 'ready' });
          } catch (error) {
            // The answer is public: it names the dependency, the error text (hosts, paths, users) goes to the log only.
            if (logger) requestLogger(c, logger).warn({ err: error, dependency: 'database' }, 'readiness check failed');
            return c.json({ error: 'database: not answering (the gateway log has the cause)' }, 503);
          }
        },
      ],
    }),
  ]);
  return app;
}
