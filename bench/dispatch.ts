/**
 * The send path without HTTP: the gateway's own validation (prepareMessage) and dispatcher (claim, sandbox send,
 * record) on a real SQLite ledger, in this process, as many single requests at a time as the send benchmark has
 * connections. Read next to run.ts's single mode and http-floor.ts, it splits a message's cost into HTTP,
 * validation and ledger work.
 *
 * Usage: node dist/bench/dispatch.js [--messages N] [--concurrency N] [--rounds N] [--routing]
 * With --routing, every message goes to a route with rules and a country list (docs/routing.md): its routing verdict
 * (number type, rule matching, local time) is decided before the claim, and its rule's members read at the send.
 * Prints one JSON line per round: {round, messages, validate_cpu_us_per_msg, total_cpu_us_per_msg,
 * msgs_per_s}; validation is timed in a pass of its own over the same bodies, dispatch in the next.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../src/config/load.js';
import { createProviders } from '../src/provider-wrappers/providers.js';
import { migrateToLatest, openLedger } from '../src/ledger/engine/db.js';
import { createTransactionQueue } from '../src/ledger/engine/transaction-queue.js';
import { createDispatcher } from '../src/sms/dispatch.js';
import { prepareMessage } from '../src/sms/prepare.js';
import { createProviderRouter } from '../src/provider-wrappers/registry.js';
import { createRouting } from '../src/provider-wrappers/routing.js';
import { drive, round, singleMessage } from './workload.js';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    routing: { type: 'boolean', default: false },
  },
});
const [messages, concurrency, rounds] = [Number(values.messages), Number(values.concurrency), Number(values.rounds)];

/** A route whose last rule takes the bench's numbers (+44 7700 9…), after three it must pass over, one on local time. */
const ROUTING = `  other:
    type: sandbox
    receipts: false
  main:
    type: route
    members: [sandbox]
    validity: 60
    rules:
      - { name: brazil, match: { countries: [BR] }, members: [other] }
      - { name: night, match: { countries: [FR], hours: "21:00-08:00" }, members: [other] }
      - { name: other-brand, match: { brands: ["8"] }, members: [other] }
      - { name: uk, match: { prefixes: ["+447700"], brands: ["7"] }, members: [sandbox, other] }
routing:
  countries: [GB, FR, BR]
`;
const target = values.routing ? 'main' : 'sandbox';

const dir = mkdtempSync(join(tmpdir(), 'crm-sms-dispatch-bench-'));
const configFile = join(dir, 'config.yaml');
// The sandbox posts no receipts: the send path measured alone, as in run.ts's single mode.
writeFileSync(
  configFile,
  `database:\n  url: sqlite:${join(dir, 'ledger.db')}\nauth:\n  api_keys: [bench]\nproviders:\n  sandbox:\n    type: sandbox\n    receipts: false\n` +
    (values.routing ? ROUTING : ''),
);
const config = await loadConfig(configFile);
const logger = pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true }));
const ledger = openLedger(config.database, { logger, backgroundCheckpoints: { logger } });
await migrateToLatest(ledger.db);
const routing = values.routing ? createRouting(config, { db: ledger.db, readDb: ledger.readDb, logger, now: Date.now }) : undefined;
const providers = createProviders(config, { logger, now: Date.now, routing });
const router = createProviderRouter(
  providers.map((provider) => ({ provider, aliases: [] })),
  undefined,
);
const dispatcher = createDispatcher({
  db: ledger.db,
  queue: createTransactionQueue(ledger.db),
  logger,
  now: Date.now,
  storeContent: config.ledger.store_content,
  repeatTimings: { dispatchLeaseMs: config.sms.dispatch_lease, ambiguousRetryAfterMs: config.sms.ambiguous_retry_after },
  sendTimeoutMs: config.sms.send_timeout,
  callbackUrl: (provider, smsId) => `http://127.0.0.1:8080/dlr/${provider}?sms_id=${smsId}`,
  ...(routing ? { routing } : {}),
});

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** Bodies as the server receives them: text, parsed per message. */
const bodies = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => JSON.stringify(singleMessage(`${prefix}-${i}`, i, target)));

const prepare = (body: string) => {
  const prepared = prepareMessage(JSON.parse(body), router, config.sms);
  if (!prepared.ok) throw new Error(prepared.error);
  return prepared.message;
};

async function dispatchAll(texts: string[]) {
  return drive(texts.length, concurrency, async (i) => {
    const at = Date.now();
    const [result] = await dispatcher.dispatch([prepare(texts[i]!)], {
      deadline: at + config.sms.send_timeout,
      waitDeadline: at + config.sms.single_wait,
      concurrency: 1,
    });
    if (result!.outcome !== 'submitted') throw new Error(`message ${i}: ${JSON.stringify(result)}`);
    return 0;
  });
}

try {
  await dispatchAll(bodies('warmup', 2_000));
  for (let r = 1; r <= rounds; r++) {
    const texts = bodies(`round${r}`, messages);
    const validateStart = cpuUs();
    for (const text of texts) prepare(text);
    const validateUs = cpuUs() - validateStart;
    const totalStart = cpuUs();
    const measured = await dispatchAll(texts);
    const totalUs = cpuUs() - totalStart;
    console.log(
      JSON.stringify({
        round: r,
        messages,
        routing: values.routing,
        validate_cpu_us_per_msg: round(validateUs / messages, 1),
        total_cpu_us_per_msg: round(totalUs / messages, 1),
        msgs_per_s: Math.round(messages / measured.seconds),
      }),
    );
  }
} finally {
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
}
// The sandbox still holds the receipts it would post in an hour (to nobody): leave them.
process.exit(0);
