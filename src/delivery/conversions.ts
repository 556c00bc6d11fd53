/**
 * The conversion outbox as one unit (src/outbox/descriptor.ts): conversions to the CRM's webhook
 * ({crm.webhook_url}/sms/conversion, webhook.ts), claimed and posted by conversion-outbox.ts when delivery.worker is
 * on, with its /metrics series (conversion-metrics.ts), its console panel and dead list (dead-letters-page.ts) and its
 * /admin routes (admin-routes.ts). Listed in src/outboxes.ts.
 */
import { countOutboxBacklog } from '../ledger/conversions.js';
import { runSweep } from './sweep.js';
import type { OutboxDescriptor } from '../outbox/descriptor.js';
import { conversionAdminRoutes } from './admin-routes.js';
import { registerConversionMetrics, type WebhookMetrics } from './conversion-metrics.js';
import { conversionOutbox } from './conversion-outbox.js';
import { conversionPanel, deadLettersList } from './dead-letters-page.js';
import { createWebhookClient, type WebhookClient } from './webhook.js';

export const conversions: OutboxDescriptor<WebhookClient, WebhookMetrics> = {
  name: 'conversions',
  flushLine: { prefix: 'flush', sent: 'posted', unreachable: 'webhook unreachable' },
  receiver(config, { purpose, logger, http }) {
    if (purpose === 'serve' && !config.delivery.worker) return undefined;
    if (!config.crm.webhook_url) {
      if (purpose === 'serve') logger.warn('crm.webhook_url is not set: conversions wait in the outbox');
      return undefined;
    }
    return { client: createWebhookClient(config.crm, http) };
  },
  outbox: (config, webhook, deps) => conversionOutbox({ ...deps, webhook, delivery: config.delivery }),
  async backlog(db) {
    const { due, retrying, dead } = await countOutboxBacklog(db);
    return { left: due + retrying, dead };
  },
  // Silent messages become delivery_unknown first, so their conversions go out in this flush.
  beforeFlush: async (config, db, now) => ({ unknown_marked: (await runSweep(db, now, config.delivery, {}, config.sms.dispatch_lease)).unknown }),
  metrics: registerConversionMetrics,
  panel: () => conversionPanel,
  deadList: deadLettersList,
  adminRoutes: conversionAdminRoutes,
};
