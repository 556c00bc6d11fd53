/**
 * npm run bench — figures for the send path, printed, never asserted (docs/design.md §6, §7).
 *
 *   node dist/bench/run.js                      single, then batch, then e2e
 *   node dist/bench/run.js --mode batch         one mode (repeat --mode for several)
 *   --database postgres://…/postgres            ledger in a fresh PostgreSQL database (reports the database's CPU)
 *   --layout flat                               that fresh database's layout (database.layout; default by_day)
 *   --instances 2                               gateway processes sharing the ledger, requests balanced over them
 *   --seed FILE                                 each run's ledger a copy of this SQLite ledger (with --database: the
 *                                               database of that name on the server, copied as a template)
 *   --ledger FILE                               the run's ledger is this SQLite file itself, not a copy (a ledger too
 *                                               large to copy each run; the run's messages stay in it; with
 *                                               --database: the database of that name)
 *   --retention DURATION                        the gateway runs retention passes (retention.messages DURATION, every
 *                                               second) while the mode is measured; the line adds the messages they
 *                                               deleted meanwhile (with --seed, so that there are old ones to delete)
 *   --scrape-every DURATION                     GET /metrics at this interval while the mode is measured, as Prometheus
 *                                               does; the line adds the scrapes' time (on a seed with a backlog owed,
 *                                               what a scrape costs the sends beside it)
 *   --players N                                 messages go to the first N players of a prefilled ledger, their numbers
 *                                               and user_ids as prefill-rows.ts made them (a seed of M messages has
 *                                               M/12 players), so their keys land all over the trees; without it, to
 *                                               new players with numbers in one narrow range (workload.ts)
 *   --crm-down                                  the gateway relays CRM events to an Integration API that answers 503 to
 *                                               each: on a seed with events owed, the relay retries them while the mode
 *                                               is measured, as through a CRM outage; the line adds the requests refused
 *   node dist/bench/run.js --prefill N --days D --out FILE   writes such a ledger and exits (--database URL: on
 *                                               PostgreSQL; bench/prefill.ts)
 *   node dist/bench/run.js --mode search        message search at 10M messages (--rows N --runs N; bench/message-search.ts)
 *   e2e: batches through the provider (receipts at once) until the fake CRM holds every conversion
 *   e2e-single: single requests the same way (the peer benchmark's single mode; --mode e2e-single, not in the default list)
 *   forged: forged Twilio callbacks of the worst shape on 32 connections, from one address then many, /healthz probed
 *           (--mode forged --warmup 0 --messages N; not in the default list; bench/forged.ts)
 *   relay: mixed events (bonus, payment, casino, login, custom, balance) of 1,000 users through /relay to a sink (--mode relay; not in the default list)
 *   options: --messages N (20000) --connections N (50) --batch-size N (500) --batch-concurrency N (4)
 *            --warmup N (1000, not measured) --cpu-prof DIR (V8 profile of the server, written when it stops)
 *            --provider sandbox|twilio|smpp (sandbox; twilio: the plugin against the Twilio fake; smpp: the plugin
 *            bound to the fake SMSC, --window N submit_sm outstanding (10); see providers.ts)
 *            relay: --relay-batch-size N (relay.batch_size) --relay-connections N (crm.integration.max_connections);
 *            unset, the config's defaults
 *
 * Each run gets a fresh gateway child process on a fresh SQLite ledger, and prints one JSON line: {mode, provider,
 * messages, msgs_per_s, p50_ms, p99_ms, p999_ms, max_ms, server_peak_rss_mb, server_cpu_us_per_msg,
 * provider_process_cpu_us_per_msg, load_average_1m}. Latency is per HTTP request (for batch: per batch). Server CPU includes the provider plugin's
 * sends (bench/provider-client.ts measures the twilio plugin's share alone); provider_process_cpu_us_per_msg is the
 * Twilio fake's own process (null for the sandbox, which runs inside the server). A mode is an entry in MODES, its
 * config and its load: add one there.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { parseDuration } from '../src/kit/duration.js';
import { PROVIDERS, startBenchProvider, type BenchProvider, type ProviderChoice } from './providers.js';
import { createBenchDatabase } from './database.js';
import { forgedMode } from './forged.js';
import { hostileMode } from './hostile.js';
import { relayMode } from './relay.js';
import { LoadClient } from './load-client.js';
import { BENCH_API_KEY, baseConfig, startServer, type ConfigDoc, type ServerProcess } from './server-process.js';
import { runSearchBench } from './message-search.js';
import { runPrefill } from './prefill.js';
import { drive, latencySummary, round, singleMessage, type Measurement } from './workload.js';

interface Options {
  messages: number;
  connections: number;
  batchSize: number;
  batchConcurrency: number;
  warmup: number;
  cpuProfDir: string | undefined;
  provider: ProviderChoice;
  /** A PostgreSQL server URL: the run's ledger is a fresh database there (default: a SQLite file). */
  database: string | undefined;
  /** The layout of that fresh database (database.layout): a seed or a served ledger keeps its own. */
  layout: 'by_day' | 'flat';
  /** A prefilled ledger (bench/prefill.ts) each run starts from a copy of: a SQLite file, or a database's name with `database`. */
  seed: string | undefined;
  /** A ledger served in place (a SQLite file, or a database's name with `database`): the runs' messages are added to it. */
  ledger: string | undefined;
  /** Gateway processes sharing the ledger, requests spread over them. */
  instances: number;
  /** retention.messages of the measured gateway, its pass run every second: sends measured while it deletes. */
  retention: string | undefined;
  /** /metrics is read at this interval (ms) while the mode is measured. */
  scrapeEveryMs: number | undefined;
  /** The relay sends to an Integration API that answers 503 to every event. */
  crmDown: boolean;
  /** The SMPP provider's window (--provider smpp). */
  window: number;
  /** Messages go to a prefilled ledger's players, this many of them (singleMessage). */
  players: number | undefined;
  /** relay mode: relay.batch_size and crm.integration.max_connections (unset: the config's defaults). */
  relayBatchSize: number | undefined;
  relayConnections: number | undefined;
}

interface Load {
  client: LoadClient;
  options: Options;
  provider: BenchProvider;
  /** Distinct activity ids per run and phase, so warm-up messages never make measured ones idempotent repeats. */
  idPrefix: string;
  /** The gateways' base URLs (modes that send more than the client's requests). */
  urls: string[];
  /** CPU time the gateway processes have used so far, in ms (modes that measure phases of their own). */
  serverCpuMs: () => number | null;
  /** Told the sms_ids of each accepted batch and when it was submitted (the end-to-end mode times conversions from there). */
  onAccepted?: (smsIds: string[], submittedAt: number) => void;
}

interface Mode {
  /** Starts what the mode's config refers to (e.g. a fake CRM) before the server. */
  prepare?(): Promise<void>;
  /** Whether the provider posts a receipt for every message while measured (else none). */
  receipts?: boolean;
  /** The server's config for this mode, from the base one (a temp ledger and the chosen provider). */
  config?(base: ConfigDoc, options: Options): ConfigDoc;
  run(load: Load, messages: number): Promise<Measurement>;
}

async function post(client: LoadClient, path: string, body: unknown): Promise<{ status: number; json: any; ms: number }> {
  const started = performance.now();
  const res = await client.post(path, JSON.stringify(body));
  return { status: res.status, json: JSON.parse(res.body), ms: performance.now() - started };
}

/** A CRM conversion webhook that records when each sms_id's conversion arrived. */
const crm = {
  url: '',
  arrivals: new Map<string, number>(),
  async start() {
    if (this.url) return;
    const server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const at = performance.now();
      for (const c of JSON.parse(Buffer.concat(chunks).toString('utf8')) as Array<{ sms_id: string }>) crm.arrivals.set(c.sms_id, at);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"message":"success"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    server.unref();
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
};

/** The CRM's Integration API through an outage: every event refused with a 503, counted. */
const downCrm = {
  url: '',
  refused: 0,
  async start() {
    if (this.url) return;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        downCrm.refused++;
        res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    server.unref();
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  },
};

const MODES: Record<string, Mode> = {
  /** One message per request on keep-alive connections, as the CRM's single channel sends them. */
  single: {
    async run({ client, options, provider, idPrefix }, messages) {
      const m = await drive(messages, options.connections, async (i) => {
        const res = await post(client, '/channels/sms/single', singleMessage(`${idPrefix}-${i}`, i, provider.name, options.players));
        if (res.status !== 200) throw new Error(`single ${i}: ${res.status} ${JSON.stringify(res.json)}`);
        return res.ms;
      });
      return { ...m, messages };
    },
  },

  /** Arrays of batch-size messages, batch-concurrency requests at a time. */
  batch: {
    async run({ client, options, provider, idPrefix, onAccepted }, messages) {
      const batches = Math.ceil(messages / options.batchSize);
      const m = await drive(batches, options.batchConcurrency, async (b) => {
        const first = b * options.batchSize;
        const size = Math.min(options.batchSize, messages - first);
        const body = Array.from({ length: size }, (_, k) => singleMessage(`${idPrefix}-${first + k}`, first + k, provider.name, options.players));
        const submittedAt = performance.now();
        const res = await post(client, '/channels/sms/batch', body);
        if (res.status !== 200 || res.json.successful?.length !== size) {
          throw new Error(
            `batch ${b}: ${res.status}, ${res.json.failed?.length} failed, ${res.json.fatal?.length} fatal: ${JSON.stringify(res.json).slice(0, 300)}`,
          );
        }
        onAccepted?.(
          res.json.successful.map((s: { sms_id: string }) => s.sms_id),
          submittedAt,
        );
        return res.ms;
      });
      return { ...m, messages };
    },
  },
};

MODES.e2e = {
  prepare: () => crm.start(),
  receipts: true,
  config: (base) => ({
    ...base,
    crm: { webhook_url: crm.url, webhook_api_key: 'bench' },
    delivery: { poll_interval: '20ms', batch_size: 500 },
  }),
  /**
   * Batches as the CRM sends them, then waits until the CRM holds every conversion. Latencies are conversion
   * lag: from the submission of the batch that carried the message to the conversion's arrival at the CRM. (Not
   * from the batch's answer: a provider that sends within the request, like twilio, gets receipts back, and the
   * CRM its conversions, before the last message of the batch is sent.)
   */
  async run(load, messages) {
    const sentAt = new Map<string, number>();
    const started = performance.now();
    await MODES.batch!.run(
      { ...load, onAccepted: (smsIds: string[], submittedAt: number) => smsIds.forEach((id) => sentAt.set(id, submittedAt)) } as Load,
      messages,
    );
    await allConverted(sentAt, load.provider);
    const finished = Math.max(...[...sentAt.keys()].map((id) => crm.arrivals.get(id)!));
    return { messages, seconds: (finished - started) / 1000, latenciesMs: [...sentAt].map(([id, at]) => crm.arrivals.get(id)! - at) };
  },
};

/**
 * Single requests as in `single`, with the provider's receipts at once and the conversions posted to the CRM, as the
 * peer benchmark's single mode runs the gateway (receipts then arrive a few at a time, so the per-request costs of
 * the receipt path and the worker's per-round costs show). Latency is conversion lag from the message's submit.
 */
MODES['e2e-single'] = {
  prepare: () => crm.start(),
  receipts: true,
  config: (base) => ({ ...base, crm: { webhook_url: crm.url, webhook_api_key: 'bench' } }),
  async run({ client, options, provider, idPrefix }, messages) {
    const sentAt = new Map<string, number>();
    const started = performance.now();
    await drive(messages, options.connections, async (i) => {
      const submittedAt = performance.now();
      const res = await post(client, '/channels/sms/single', singleMessage(`${idPrefix}-${i}`, i, provider.name, options.players));
      if (res.status !== 200) throw new Error(`single ${i}: ${res.status} ${JSON.stringify(res.json)}`);
      sentAt.set(res.json.sms_id, submittedAt);
      return res.ms;
    });
    await allConverted(sentAt, provider);
    const finished = Math.max(...[...sentAt.keys()].map((id) => crm.arrivals.get(id)!));
    return { messages, seconds: (finished - started) / 1000, latenciesMs: [...sentAt].map(([id, at]) => crm.arrivals.get(id)! - at) };
  },
};

/** Mixed events from 1,000 users through the event relay to a sink for the CRM (bench/relay.ts). */
MODES.relay = relayMode as Mode;

/** Single sends quiet, then under hostile callback requests (bench/hostile.ts). */
MODES.hostile = hostileMode as Mode;
/** Forged Twilio callbacks of the worst shape on 32 connections, from one address then from many (bench/forged.ts). */
MODES.forged = forgedMode as Mode;

/** Waits until the CRM holds a conversion for every sms_id; fails after a minute without progress. */
async function allConverted(sentAt: Map<string, number>, provider: BenchProvider): Promise<void> {
  let missing = sentAt.size;
  let progressAt = performance.now();
  for (;;) {
    let stillMissing = 0;
    for (const id of sentAt.keys()) if (!crm.arrivals.has(id)) stillMissing++;
    if (stillMissing === 0) return;
    if (stillMissing < missing) [missing, progressAt] = [stillMissing, performance.now()];
    else if (performance.now() - progressAt > 60_000) {
      throw new Error(
        `e2e: ${missing} of ${sentAt.size} conversions still missing after 60 s without progress (provider: ${JSON.stringify(await provider.stats())})`,
      );
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

const cpuUsPerMsg = (before: number | null, after: number | null, messages: number) =>
  before === null || after === null ? null : Math.round(((after - before) * 1000) / messages);

async function runMode(name: string, mode: Mode, options: Options): Promise<Record<string, unknown>> {
  await mode.prepare?.();
  if (options.crmDown) await downCrm.start();
  const provider = await startBenchProvider(options.provider, mode.receipts ?? false, { window: options.window });
  const config = (dir: string) => {
    const initial = baseConfig(dir);
    const base = { ...initial, providers: provider.providers };
    const scraped = options.retention || options.scrapeEveryMs ? { ...base, metrics: { public: true } } : base;
    const withRetention = options.retention ? { ...scraped, retention: { messages: options.retention, interval: '1s' } } : scraped;
    const relayed = options.crmDown ? { ...withRetention, crm: { integration: { url: downCrm.url } } } : withRetention;
    return mode.config?.(relayed, options) ?? relayed;
  };
  // Every instance serves the same ledger; the client spreads requests over them like a load balancer.
  const database = await createBenchDatabase(options.database, options.seed, options.ledger);
  const servers: ServerProcess[] = [];
  try {
    for (let i = 0; i < options.instances; i++) {
      const shared = (dir: string) => ({ ...config(dir), database: { url: database.url, layout: options.layout } });
      servers.push(await startServer({ config: shared, cpuProfDir: options.cpuProfDir }));
    }
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()));
    await provider.stop();
    await database.drop();
    throw error;
  }
  const server = servers[0]!;
  await provider.ready?.(options.instances);
  const serversCpuMs = () => servers.reduce<number | null>((sum, s) => (sum === null || s.cpuMs() === null ? null : sum + s.cpuMs()!), 0);
  const client = new LoadClient(
    servers.map((s) => s.url),
    options.connections,
    { 'content-type': 'application/json', 'x-api-key': BENCH_API_KEY },
  );
  const clientCpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  // Activity ids unique to this run: a ledger served in place (--ledger) keeps every earlier run's, and a repeat would
  // be answered from its first row instead of sent.
  const runTag = Date.now().toString(36);
  try {
    const urls = servers.map((s) => s.url);
    if (options.warmup > 0)
      await mode.run({ client, options, provider, urls, serverCpuMs: serversCpuMs, idPrefix: `${name}-${runTag}-warmup` }, options.warmup);
    const deletedBefore = options.retention ? await retentionDeleted(urls) : 0;
    const [cpuBefore, providerCpuBefore, dbCpuBefore, clientCpuBefore] = [serversCpuMs(), provider.cpuMs(), database.cpuMs(), clientCpuMs()];
    const scrapes = options.scrapeEveryMs ? startScrapes(urls[0]!, options.scrapeEveryMs) : undefined;
    const refusedBefore = downCrm.refused;
    const measured = await mode.run({ client, options, provider, urls, serverCpuMs: serversCpuMs, idPrefix: `${name}-${runTag}-run` }, options.messages);
    const scraped = scrapes ? await scrapes.stop() : undefined;
    const [cpuAfter, providerCpuAfter, dbCpuAfter, clientCpuAfter] = [serversCpuMs(), provider.cpuMs(), database.cpuMs(), clientCpuMs()];
    const retention = options.retention
      ? { retention: options.retention, retention_deleted_per_s: Math.round(((await retentionDeleted(urls)) - deletedBefore) / measured.seconds) }
      : {};
    return {
      mode: name,
      provider: provider.name,
      ...provider.labels,
      messages: measured.messages,
      msgs_per_s: Math.round(measured.messages / measured.seconds),
      ...(name === 'e2e' ? { latency: 'conversion lag from batch submit' } : name === 'e2e-single' ? { latency: 'conversion lag from submit' } : {}),
      ...((measured as { extra?: Record<string, unknown> }).extra ?? {}),
      ...retention,
      ...(scraped ? { scrapes: scraped.length, scrape_ms: latencySummary(scraped) } : {}),
      ...(options.players ? { players: options.players } : {}),
      ...(options.crmDown ? { crm_down: true, crm_events_refused: downCrm.refused - refusedBefore } : {}),
      ...latencySummary(measured.latenciesMs),
      database: database.kind,
      instances: servers.length,
      server_peak_rss_mb: server.peakRssMb(),
      // Not a target, but steadier than msgs_per_s on a shared machine: server CPU per message while measured.
      server_cpu_us_per_msg: cpuUsPerMsg(cpuBefore, cpuAfter, measured.messages),
      provider_process_cpu_us_per_msg: cpuUsPerMsg(providerCpuBefore, providerCpuAfter, measured.messages),
      database_cpu_us_per_msg: cpuUsPerMsg(dbCpuBefore, dbCpuAfter, measured.messages),
      // This process: the load generator (and, in e2e, the fake CRM). On 2 cores it competes with the gateway.
      client_cpu_us_per_msg: cpuUsPerMsg(clientCpuBefore, clientCpuAfter, measured.messages),
      load_average_1m: round(loadavg()[0]!, 2),
    };
  } finally {
    client.close();
    // The provider first: the Twilio fake waits for its callbacks in flight, which need the server.
    await provider.stop();
    await Promise.all(servers.map((s) => s.stop()));
    await database.drop();
  }
}

/**
 * Reads `url`/metrics every `everyMs` until stopped, as Prometheus scrapes a target: a tick that finds the last read
 * still running is skipped, never stacked on it. `stop` answers each read's time in ms; a failed read fails the run.
 */
function startScrapes(url: string, everyMs: number): { stop: () => Promise<number[]> } {
  const times: number[] = [];
  let running: Promise<void> | undefined;
  let failure: unknown;
  const timer = setInterval(() => {
    if (running) return;
    const started = performance.now();
    running = fetch(`${url}/metrics`)
      .then((response) => response.text())
      .then(
        () => void times.push(performance.now() - started),
        (error: unknown) => void (failure ??= error),
      )
      .finally(() => {
        running = undefined;
      });
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
      if (failure !== undefined) throw failure;
      return times;
    },
  };
}

/** Messages the gateways' retention passes deleted so far (their /metrics, public in a --retention run). */
async function retentionDeleted(urls: string[]): Promise<number> {
  let total = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('sms_gateway_retention_rows_total{') && l.includes('table="messages"') && l.includes('action="deleted"'));
    total += line ? Number(line.split(' ').pop()) : 0;
  }
  return total;
}

function parseOptions(argv: string[]): { modes: string[]; options: Options } {
  const { values } = parseArgs({
    args: argv,
    options: {
      mode: { type: 'string', multiple: true },
      messages: { type: 'string', default: '20000' },
      connections: { type: 'string', default: '50' },
      'batch-size': { type: 'string', default: '500' },
      'batch-concurrency': { type: 'string', default: '4' },
      warmup: { type: 'string', default: '1000' },
      'cpu-prof': { type: 'string' },
      provider: { type: 'string', default: 'sandbox' },
      database: { type: 'string' },
      layout: { type: 'string', default: 'by_day' },
      seed: { type: 'string' },
      ledger: { type: 'string' },
      instances: { type: 'string', default: '1' },
      retention: { type: 'string' },
      'scrape-every': { type: 'string' },
      'crm-down': { type: 'boolean', default: false },
      window: { type: 'string', default: '10' },
      players: { type: 'string' },
      'relay-batch-size': { type: 'string' },
      'relay-connections': { type: 'string' },
    },
  });
  const int = (name: string, text: string, min: number) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min} (got ${text})`);
    return n;
  };
  const positiveDuration = (name: string, text: string) => {
    const ms = parseDuration(text);
    if (ms === null || ms <= 0) throw new Error(`--${name} must be a duration such as 15s (got ${text})`);
    return ms;
  };
  const modes = values.mode ?? ['single', 'batch', 'e2e'];
  for (const m of modes) if (!(m in MODES)) throw new Error(`unknown mode "${m}" (modes: ${Object.keys(MODES).join(', ')})`);
  const layout = values.layout;
  if (layout !== 'by_day' && layout !== 'flat') throw new Error(`--layout is by_day or flat (got "${layout}")`);
  const provider = values.provider as ProviderChoice;
  if (!PROVIDERS.includes(provider)) throw new Error(`unknown provider "${provider}" (providers: ${PROVIDERS.join(', ')})`);
  return {
    modes,
    options: {
      messages: int('messages', values.messages, 1),
      connections: int('connections', values.connections, 1),
      batchSize: int('batch-size', values['batch-size'], 1),
      batchConcurrency: int('batch-concurrency', values['batch-concurrency'], 1),
      warmup: int('warmup', values.warmup, 0),
      cpuProfDir: values['cpu-prof'],
      provider,
      database: values.database,
      layout,
      seed: values.seed,
      ledger: values.ledger,
      instances: int('instances', values.instances, 1),
      retention: values.retention,
      scrapeEveryMs: values['scrape-every'] === undefined ? undefined : positiveDuration('scrape-every', values['scrape-every']),
      crmDown: values['crm-down'],
      window: int('window', values.window, 1),
      players: values.players === undefined ? undefined : int('players', values.players, 1),
      relayBatchSize: values['relay-batch-size'] === undefined ? undefined : int('relay-batch-size', values['relay-batch-size'], 1),
      relayConnections: values['relay-connections'] === undefined ? undefined : int('relay-connections', values['relay-connections'], 1),
    },
  };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  // The search mode starts no gateway: it loads a ledger of its own and times the search queries on it.
  if (argv.some((a, i) => a === '--mode=search' || (a === '--mode' && argv[i + 1] === 'search'))) return runSearchBench(argv);
  // Prefilling writes a ledger and exits: no gateway, no mode.
  if (argv.some((a) => a === '--prefill' || a.startsWith('--prefill='))) return runPrefill(argv);
  const { modes, options } = parseOptions(argv);
  for (const name of modes) console.log(JSON.stringify(await runMode(name, MODES[name]!, options)));
}

main().catch((error: unknown) => {
  console.error(`bench: ${(error as Error)?.stack ?? String(error)}`);
  process.exit(1);
});
