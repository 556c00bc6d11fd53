/** /healthz: the process answers. /readyz: the ledger answers too (load balancers stop routing when it does not). */
import { Hono } from 'hono';
import { sql, type Kysely } from 'kysely';

export function healthRoutes(db: Kysely<any>) {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await sql`select 1`.execute(db);
      return c.json({ status: 'ready' });
    } catch (error) {
      return c.json({ error: `database unavailable: ${(error as Error).message}` }, 503);
    }
  });
  return app;
}
