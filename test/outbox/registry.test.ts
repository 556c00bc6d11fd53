/**
 * The outbox registry (src/outboxes.ts): a kind is one descriptor (src/outbox/descriptor.ts) and one line of the list.
 * A kind written here, whose receiver is a provider-like object rather than an HTTP webhook (as held sends and price
 * fetches will be), is added beside the registry's kinds and shows up everywhere the gateway iterates over them: the
 * cron flush's summary, its /admin routes, the console's dashboard and dead list (whose replay wakes it by its name),
 * /metrics and /openapi.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { html } from 'hono/html';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFlush } from '../../src/commands/flush.js';
import { renderDeadList } from '../../src/outbox/dead-list-frame.js';
import type { OutboxDescriptor } from '../../src/outbox/descriptor.js';
import { registerOutboxMetrics } from '../../src/outbox/metrics.js';
import type { OutboxOutcome } from '../../src/outbox/outcome.js';
import { deadListAnswers, page } from '../../src/outbox/page-docs.js';
import { renderOwedRow } from '../../src/outbox/panel.js';
import { OUTBOXES } from '../../src/outboxes.js';
import { route } from '../../src/http/route-table.js';
import { dropTestDatabase } from '../helpers/database.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { parsePrometheusText, valueOf } from '../helpers/prometheus.js';

/** A row the test kind owes its receiver. Its rows live in memory: a real kind's table and claim are in src/ledger/. */
interface Owed {
  id: number;
  attempts: number;
  state: 'due' | 'sent' | 'dead';
}

/** A receiver that is not HTTP: a provider the kind hands each row to, answering as an outbox receiver answers. */
interface Taker {
  take(row: Owed): Promise<OutboxOutcome>;
}

function testKind(rows: Owed[], taker: Taker): OutboxDescriptor<Taker, ReturnType<typeof registerOutboxMetrics>> {
  const backlog = () => ({ due: rows.filter((r) => r.state === 'due').length, dead: rows.filter((r) => r.state === 'dead').length });
  const mark = (ids: number[], state: Owed['state']) => {
    for (const r of rows) if (ids.includes(r.id)) Object.assign(r, { state, attempts: r.attempts + 1 });
  };
  return {
    name: 'tests',
    flushLine: { prefix: 'flush tests', sent: 'taken', unreachable: 'taker unreachable' },
    receiver: () => ({ client: taker }),
    outbox: (_config, client, deps) => ({
      name: 'test outbox',
      settings: { batch_size: 10, poll_interval: 20, retry_initial_ms: 10, retry_max_ms: 10, max_attempts: 1, lease: 5_000 },
      claim: async () => rows.filter((r) => r.state === 'due'),
      attemptsOf: (r) => r.attempts,
      send: async (claimed) => Promise.all(claimed.map(async (r) => ({ rows: [r], outcome: await client.take(r) }))),
      markSent: async (_db, ids) => mark(ids, 'sent'),
      markFailed: async (_db, failed) => {
        for (const f of failed) mark([f.id], f.dead ? 'dead' : 'due');
      },
      again: (round) => round.sent.length > 0,
      report: (round) => deps.metrics?.sent(round.sent.length),
      onDead: (count, reason) => deps.metrics?.dead(count, reason),
    }),
    backlog: async () => ({ left: backlog().due, dead: backlog().dead }),
    metrics: (registry) =>
      registerOutboxMetrics(
        registry,
        {
          sent: { name: 'sms_gateway_tests_taken_total', help: 'Test rows taken' },
          dead: { name: 'sms_gateway_tests_dead_lettered_total', help: 'Test rows dead-lettered' },
          backlog: { name: 'sms_gateway_tests_outbox', help: 'Test rows owed', states: (b: ReturnType<typeof backlog>) => b },
        },
        async () => backlog(),
      ),
    panel: () => ({
      section: 'tests',
      heading: 'Test outbox',
      load: async () => backlog(),
      render: (b, at) =>
        renderOwedRow(
          at,
          'tests',
          'data-tests',
          { owed: ['due', b.due], retrying: 0, dead: b.dead, oldestAt: null },
          { owed: 'owed', dead: 'dead', oldest: 'oldest' },
        ),
      deadList: { href: '/console/dead-tests', text: 'The dead test rows →' },
    }),
    deadList: () => ({
      kind: 'tests',
      list: {
        path: '/dead-tests',
        signIn: 'Sign in to see the dead test rows.',
        doc: { tag: 'console', summary: 'Dead test rows', responses: deadListAnswers('dead-test') },
      },
      replay: {
        path: '/tests/replay',
        name: 'dead test rows',
        doc: { tag: 'console', summary: 'Replay dead test rows', responses: { 303: page('Back to the list') } },
      },
      load: async () => ({ ok: true, rows: rows.filter((r) => r.state === 'dead'), nextCursor: null }),
      render: (view) =>
        renderDeadList(view, {
          section: 'dead-tests',
          heading: 'Dead test rows',
          intro: html``,
          listPath: '/console/dead-tests',
          replayPath: '/console/tests/replay',
          filterFields: html``,
          hiddenFilter: html``,
          filtered: false,
          headers: ['attempts'],
          afterHeaders: [],
          rows: view.rows.map((r) => ({ id: String(r.id), attribute: 'data-test-row', cells: html`<td>${r.attempts}</td>`, after: html`` })),
          replayedNoun: 'dead test row(s)',
          replayedThen: 'taken now.',
          none: 'No dead test row',
          all: 'dead test rows',
        }),
      readForm: () => ({ ok: true, match: null }),
      replayRows: async () => {
        const dead = rows.filter((r) => r.state === 'dead');
        for (const r of dead) r.state = 'due';
        return dead.length;
      },
    }),
    adminRoutes: ({ wake }) => [
      route({
        method: 'get',
        path: '/tests/backlog',
        doc: {
          tag: 'admin',
          summary: 'The test kind’s backlog',
          security: ['adminBearer'],
          responses: { 200: { description: 'due and dead', schema: z.object({ due: z.number(), dead: z.number() }) } },
        },
        handlers: [
          (c) => {
            wake('tests');
            return c.json(backlog());
          },
        ],
      }),
    ],
  };
}

describe('a kind added to the registry', () => {
  const rows: Owed[] = [];
  let refuse = true;
  const taken: number[] = [];
  const taker: Taker = {
    async take(row) {
      if (refuse) return { ok: false, status: null, error: 'the taker is down', refused: true };
      taken.push(row.id);
      return { ok: true, status: null };
    },
  };
  const kinds = [...OUTBOXES, testKind(rows, taker)];
  let gw: TestGateway;
  const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

  beforeAll(async () => {
    rows.push({ id: 1, attempts: 0, state: 'due' }, { id: 2, attempts: 0, state: 'due' });
    gw = await startTestGateway({}, { outboxes: kinds });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('runs in serve: its loop dead-letters what the taker refuses, counted on /metrics and shown in /admin', async () => {
    await waitFor(async () => rows.every((r) => r.state === 'dead'), 5_000, 'both rows dead');
    const metrics = parsePrometheusText(await (await fetch(`${gw.url}/metrics`, { headers: admin })).text());
    expect(valueOf(metrics, 'sms_gateway_tests_dead_lettered_total')).toBe(2);
    expect(valueOf(metrics, 'sms_gateway_tests_outbox', { state: 'dead' })).toBe(2);
    expect((await gw.get('/admin/tests/backlog', admin)).json).toEqual({ due: 0, dead: 2 });
    expect((await gw.get('/admin/tests/backlog')).status).toBe(401);
  });

  it('has its panel on the dashboard and its dead list in the console, whose replay wakes its loop', async () => {
    const login = await fetch(`${gw.url}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key: TEST_ADMIN_KEY }).toString(),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const dashboard = await (await fetch(`${gw.url}/console`, { headers: { cookie } })).text();
    expect(dashboard).toContain('<section id="tests">');
    expect(dashboard).toMatch(/<td data-tests="dead">2<\/td>/);
    const list = await (await fetch(`${gw.url}/console/dead-tests`, { headers: { cookie } })).text();
    expect(list.match(/data-test-row="\d"/g)).toEqual(['data-test-row="1"', 'data-test-row="2"']);
    const csrf = /name="csrf" value="([^"]+)"/.exec(list)![1]!;
    refuse = false;
    const replay = await fetch(`${gw.url}/console/tests/replay`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, action: 'matching' }).toString(),
    });
    expect(replay.status).toBe(303);
    await waitFor(async () => taken.length === 2, 5_000, 'both rows taken after the replay');
    // The receiver took them; the round counts them once it has marked them, a moment later.
    await waitFor(
      async () => valueOf(parsePrometheusText(await (await fetch(`${gw.url}/metrics`, { headers: admin })).text()), 'sms_gateway_tests_taken_total') === 2,
      5_000,
      'both rows counted',
    );
  });

  it('is documented in /openapi.json with the registry’s kinds', async () => {
    const doc = (await (await fetch(`${gw.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/admin/tests/backlog', '/console/dead-tests', '/admin/conversions/dead']));
  });

  it('has its line in the cron flush, after the registry’s kinds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-registry-'));
    const flushed = await startTestGateway({}, { dir });
    await flushed.close();
    const local: Owed[] = [{ id: 7, attempts: 0, state: 'due' }];
    let text = '';
    const out = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    try {
      const code = await runFlush(flushed.config, out, [...OUTBOXES, testKind(local, taker)]);
      expect(code).toBe(0);
      // No receiver of the registry's kinds is configured here: the test kind's is the only line.
      expect(text).toBe('flush tests: taken=1 failed=0 dead=0 left=0 dead_total=0\n');
    } finally {
      await dropTestDatabase(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
