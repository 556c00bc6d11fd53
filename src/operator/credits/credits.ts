/**
 * The credits outbox as one unit (src/outbox/descriptor.ts): the sql backend's committed credits pushed to
 * operator.credits.url by credit-outbox.ts, with its /metrics series (credit-metrics.ts), its console panel and dead
 * list (dead-credits-page.ts) and its /admin routes (admin-routes.ts). Listed in src/outboxes.ts.
 */
import { countCreditBacklog } from '../../ledger/credit-delivery.js';
import type { OutboundPool } from '../../http/outbound.js';
import type { OutboxDescriptor } from '../../outbox/descriptor.js';
import { creditAdminRoutes } from './admin-routes.js';
import { registerCreditMetrics } from './credit-metrics.js';
import { creditOutbox } from './credit-outbox.js';
import { creditPanel, deadCreditsList } from './dead-credits-page.js';

export const credits: OutboxDescriptor<{ url: string; pool: OutboundPool }, ReturnType<typeof registerCreditMetrics>> = {
  name: 'credits',
  flushLine: { prefix: 'flush credits', sent: 'delivered', unreachable: 'operator.credits.url unreachable' },
  // Only the sql backend commits credits of its own.
  receiver(config, { http }) {
    const { url, timeout } = config.operator.credits;
    if (config.operator.backend !== 'sql' || !url) return undefined;
    return { client: { url, pool: http.pool({ timeout, timeoutMessage: `no answer within operator.credits.timeout (${timeout} ms)` }) } };
  },
  outbox: (config, { url, pool }, deps) =>
    creditOutbox({ ...deps, credits: { ...config.operator.credits, url }, pool, onDelivered: deps.metrics?.delivered, onDead: deps.metrics?.dead }),
  async backlog(db) {
    const { due, dead } = await countCreditBacklog(db);
    return { left: due, dead };
  },
  metrics: (registry, { readDb }) => registerCreditMetrics(registry, () => countCreditBacklog(readDb)),
  panel: (config) => (config.operator.credits.url === undefined ? undefined : creditPanel),
  deadList: deadCreditsList,
  adminRoutes: creditAdminRoutes,
};
