/** /healthz: the process answers. /readyz: the ledger answers too (load balancers stop routing when it does not). */
import { Hono } from 'hono';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { pingDatabase } from '../ledger/db.js';
import { requestLogger } from './request-context.js';

export function healthRoutes(db: Kysely<any>, logger?: Logger) {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await pingDatabase(db);
      return c.json({ status: 'ready' });
    } catch (error) {
      // The answer is public: it names the dependency, the error text (hosts, paths, users) goes to the log only.
      if (logger) requestLogger(c, logger).warn({ err: error, dependency: 'database' }, 'readiness check failed');
      return c.json({ error: 'database: not answering (the gateway log has the cause)' }, 503);
    }
  });
  return app;
}
