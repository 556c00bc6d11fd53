/** `serve`'s metrics: the gateway's registry with its ledger gauges read at scrape time on the read connection. */
import type { Kysely } from 'kysely';
import type { Config } from '../config/schema.js';
import { readDayTablesEnd } from '../ledger/engine/partitions.js';
import { countParkedReceiptsByProvider } from '../ledger/receipts.js';
import type { Database } from '../ledger/schema.js';
import { readBuildInfo } from './build-info.js';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.js';
import { pacedRead } from './paced-read.js';

/** `readDb`: the ledger's read connection, so a scrape never waits behind a write (src/ledger/engine/db.ts). */
export function createLedgerMetrics(config: Pick<Readonly<Config>, 'providers'>, readDb: Kysely<Database>): GatewayMetrics {
  return createGatewayMetrics(
    Object.keys(config.providers),
    {
      countParkedReceipts: pacedRead(
        () => countParkedReceiptsByProvider(readDb),
        (rows) => rows.reduce((sum, r) => sum + r.parked, 0),
      ),
      dayTablesEnd: () => readDayTablesEnd(readDb, Date.now()),
    },
    readBuildInfo(),
  );
}
