/**
 * Provider limits shared by the instances on one database (docs/shared-limits.md): the split as pure functions, the
 * throttle following a changing share, the heartbeat on the ledger, and three `serve` processes on one database
 * (PostgreSQL when TEST_DATABASE_URL is set, else one SQLite file) against a provider fake that counts the sends of
 * each second and the requests it holds open: together they keep the configured rate and concurrency.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openLedger } from '../../src/ledger/engine/db.js';
import type { Ledger } from '../../src/ledger/engine/ledger.js';
import { concurrencyShare, rateShare, startInstanceHeartbeat } from '../../src/provider-wrappers/shared-limits.js';
import { ConcurrencyLimiter, SegmentRateLimiter } from '../../src/provider-wrappers/throttle.js';
import { startInfobipFake, type InfobipFake } from '../fakes/infobip.js';
import { startServe, writeConfig } from '../helpers/child.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { smsMessage, TEST_API_KEY, testConfigDocument, waitFor } from '../helpers/gateway.js';

describe('a provider limit split among live instances', () => {
  it.each([
    ['one instance keeps the whole rate', 30, 1, 30],
    ['three share it evenly', 30, 3, 10],
    ['an uneven split keeps fractions (the bucket refills by them)', 10, 3, 10 / 3],
    ['a count of zero (never: this one is live) is taken as one', 30, 0, 30],
  ])('rate: %s', (_label, rate, instances, share) => {
    expect(rateShare(rate, instances)).toBeCloseTo(share, 10);
  });

  it.each([
    ['one instance keeps every slot', 10, 1, 10],
    ['three round down, so the sum stays within the limit', 10, 3, 3],
    ['more instances than slots still leaves each one slot', 2, 5, 1],
    ['a count of zero is taken as one', 4, 0, 4],
  ])('concurrency: %s', (_label, max, instances, share) => {
    expect(concurrencyShare(max, instances)).toBe(share);
  });
});

describe('a throttle whose share changes', () => {
  it('reserves at the rate of its share, and at the new share once the count changes', () => {
    let now = 0;
    let instances = 1;
    const limiter = new SegmentRateLimiter(
      10,
      () => now,
      () => instances,
    );
    // Alone: a burst of 10, then one segment per 100 ms.
    for (let i = 0; i < 10; i++) expect(limiter.reserve(1, Infinity)).toBe(0);
    expect(limiter.reserve(1, Infinity)).toBe(100);
    instances = 2;
    now = 1_000;
    // One of two: 5 a second. The debt of one is paid from the second's 5, leaving 4; then 200 ms per segment.
    expect(limiter.reserve(4, Infinity)).toBe(0);
    expect(limiter.reserve(1, Infinity)).toBe(200);
    expect(limiter.reserve(1, Infinity)).toBe(400);
  });

  it('hands out slots up to its share, and no more after the share shrinks', () => {
    let instances = 1;
    const slots = new ConcurrencyLimiter(4, () => instances);
    expect([slots.tryAcquire(), slots.tryAcquire(), slots.tryAcquire(), slots.tryAcquire(), slots.tryAcquire()]).toEqual([true, true, true, true, false]);
    instances = 2;
    slots.release();
    slots.release();
    // Two held, share two: full.
    expect(slots.tryAcquire()).toBe(false);
    slots.release();
    expect(slots.tryAcquire()).toBe(true);
  });

  it('passes freed slots to every waiter a grown share lets in', async () => {
    let instances = 2;
    const slots = new ConcurrencyLimiter(4, () => instances);
    expect([slots.tryAcquire(), slots.tryAcquire()]).toEqual([true, true]);
    const never = new AbortController().signal;
    const granted: number[] = [];
    const waiting = [1, 2, 3].map((k) => slots.acquire(never).then(() => granted.push(k)));
    instances = 1;
    slots.release();
    await Promise.all(waiting.slice(0, 3));
    expect(granted).toEqual([1, 2, 3]);
  });
});

describe('the instance heartbeat on the ledger', () => {
  let dir: string;
  let database: TestDatabase;
  let ledger: Ledger;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-heartbeat-'));
    database = await createTestDatabase(dir);
    ledger = openLedger({ url: database.url, sqlite_synchronous: 'normal', pool_size: 4 });
    await migrateToLatest(ledger.db);
  });

  afterAll(async () => {
    await ledger?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts the instances that beat recently, forgets one that stops, and one that goes silent', async () => {
    const logger = pino({ level: 'silent' });
    let now = 1_000_000;
    const options = { db: ledger.db, now: () => now, intervalMs: 60_000, expiryMs: 5_000, logger };
    const first = await startInstanceHeartbeat(options);
    expect(first.instances()).toBe(1);
    const second = await startInstanceHeartbeat(options);
    const third = await startInstanceHeartbeat(options);
    expect([second.instances(), third.instances()]).toEqual([2, 3]);
    await second.stop();
    // `third` stops beating without removing itself (a killed process): live until its heartbeat expires.
    now += 4_000;
    const fourth = await startInstanceHeartbeat(options);
    expect(fourth.instances()).toBe(3);
    now += 2_000;
    const fifth = await startInstanceHeartbeat(options);
    expect(fifth.instances()).toBe(2);
    for (const h of [first, third, fourth, fifth]) await h.stop();
  });
});

describe('three serve instances on one database', () => {
  // Low enough that three instances each applying it whole would be seen even on a loaded machine.
  const RATE = 6;
  const MAX_CONCURRENCY = 6;
  const LOAD_MS = 4_000;
  let dir: string;
  let database: TestDatabase;
  /** Limited by rate alone: answers at once. */
  let rated: InfobipFake;
  /** Limited by concurrency alone: holds each send 400 ms, so requests in flight pile up at the fake. */
  let slotted: InfobipFake;
  const instances: Array<Awaited<ReturnType<typeof startServe>>> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-shared-limits-'));
    database = await createTestDatabase(dir);
    rated = await startInfobipFake();
    slotted = await startInfobipFake({ answerDelayMs: 400 });
    const infobip = (fake: InfobipFake) => ({ type: 'infobip', api_key: fake.apiKey, base_url: fake.url, webhook_secret: 'infobip-webhook-secret-0123' });
    const file = writeConfig(
      dir,
      testConfigDocument(dir, {
        database: { url: database.url },
        server: { host: '127.0.0.1', port: 0, instance_heartbeat: '200ms', instance_expiry: '5s' },
        metrics: { public: true },
        delivery: { worker: false },
        // A single waits at most this long for capacity, so an instance asked for more than its share answers 503.
        sms: { single_wait: '500ms' },
        providers: {
          rated: { ...infobip(rated), rate_per_second: RATE },
          slotted: { ...infobip(slotted), max_concurrency: MAX_CONCURRENCY },
        },
        log: { level: 'info' },
      }),
    );
    for (let i = 0; i < 3; i++) instances.push(await startServe(file));
  }, 60_000);

  afterAll(async () => {
    for (const i of instances) i.child.kill('SIGKILL');
    await Promise.all([rated?.close(), slotted?.close()]);
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`keep a provider's ${RATE} segments a second, and another's ${MAX_CONCURRENCY} requests in flight, for the cluster, not three times them`, async () => {
    // Every instance must count all three before the load starts.
    for (const instance of instances) {
      await waitFor(async () => /^sms_gateway_instances 3$/m.test(await (await fetch(`${instance.url}/metrics`)).text()), 10_000, 'three live instances');
    }
    const started = Date.now();
    const answers = new Map<string, number>();
    let next = 0;
    const client = async (pool: Pool, provider: 'rated' | 'slotted') => {
      while (Date.now() - started < LOAD_MS) {
        const k = next++;
        const res = await pool.request({
          method: 'POST',
          path: '/channels/sms/single',
          headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
          body: JSON.stringify(smsMessage(`shared-${k}`, { provider_name: provider, recipient: `+4477009${String(10_000 + (k % 80_000)).padStart(5, '0')}` })),
        });
        await res.body.text();
        const key = `${provider} ${res.statusCode}`;
        answers.set(key, (answers.get(key) ?? 0) + 1);
      }
    };
    const pools = instances.map((i) => new Pool(i.url, { connections: 20 }));
    // Per instance, eight clients for the rated provider and six for the slotted one: more than either share.
    await Promise.all(
      pools.flatMap((pool) => [...Array.from({ length: 8 }, () => client(pool, 'rated')), ...Array.from({ length: 6 }, () => client(pool, 'slotted'))]),
    );
    await Promise.all(pools.map((p) => p.close()));

    const sends = rated.sends.map((s) => s.at).sort((a, b) => a - b);
    const seconds = (sends.at(-1)! - sends[0]!) / 1000;
    // The instances were kept busy: more was asked of each than its share allows (some singles waited past
    // sms.single_wait), and more than a burst went through. How close to the rate a starved machine gets varies.
    expect(answers.get('rated 503') ?? 0, JSON.stringify([...answers])).toBeGreaterThan(0);
    expect(answers.get('slotted 503') ?? 0, JSON.stringify([...answers])).toBeGreaterThan(0);
    expect(sends.length).toBeGreaterThan(RATE);
    // A token bucket lets through its burst plus its rate: the three instances' bursts are one second of the rate
    // together, so over the run at most RATE × (seconds + 1), and in any one second at most twice the rate, each with
    // a tenth more for timer granularity. Each instance applying the whole rate would send three times as much.
    expect(sends.length).toBeLessThanOrEqual(RATE * (seconds + 1) * 1.1);
    let busiest = 0;
    for (const [i, at] of sends.entries()) busiest = Math.max(busiest, sends.slice(i).filter((t) => t < at + 1_000).length);
    expect(busiest).toBeLessThanOrEqual(RATE * 2 * 1.1);
    // Two slots each (six split three ways), and they were all used at some point.
    expect(slotted.maxInFlight).toBeLessThanOrEqual(MAX_CONCURRENCY);
    expect(slotted.maxInFlight).toBeGreaterThanOrEqual(MAX_CONCURRENCY - 1);
  }, 60_000);
});
