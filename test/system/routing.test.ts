/**
 * Routing end to end through the real server (docs/routing.md): the rule a message took recorded on it and shown on
 * the console and in /admin/messages; destinations refused at the door with their code and counted by country;
 * admin changes (suspend, resume, weights) audited, followed by a second instance on the same PostgreSQL database and
 * kept across a restart; the configuration file's rules reloaded by SIGHUP, a bad file refused and the old kept.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, writeConfig } from '../helpers/child.js';
import { dropPostgresDatabase, postgresDatabaseUrl } from '../helpers/database.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, TEST_API_KEY, testConfigDocument, waitFor, type TestGateway } from '../helpers/gateway.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
const BR = '+5511987654321';

const routingConfig = {
  providers: {
    sinch: { type: 'sandbox', dlr_delay_ms: 0 },
    infobip: { type: 'sandbox', dlr_delay_ms: 0 },
    main: {
      type: 'route',
      aliases: ['promo'],
      members: ['sandbox'],
      rules: [
        // Weighted, with all first attempts to sinch until an admin changes the weights.
        { name: 'brazil', match: { countries: ['BR'] }, members: ['sinch', 'infobip'], strategy: 'weighted', weights: { sinch: 1, infobip: 0 } },
        { match: { brands: ['casino'] }, members: ['infobip'] },
      ],
    },
  },
  routing: { countries: ['BR', 'GB'], control_poll: '100ms' },
};

const send = (gw: TestGateway, id: string, overrides: Record<string, unknown> = {}) =>
  gw.post('/channels/sms/single', smsMessage(id, { provider_name: 'promo', recipient: BR, ...overrides }));
const storedRow = (gw: TestGateway, smsId: string) =>
  gw.gateway.ledger.db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirstOrThrow();
const change = (gw: TestGateway, body: Record<string, unknown>) => gw.post('/admin/routing/controls', body, ADMIN);

async function signIn(gw: TestGateway): Promise<{ cookie: string; csrf: string }> {
  const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${gw.url}/console/routing`, { headers: { cookie } })).text();
  return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page)![1]! };
}

describe('one instance', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(routingConfig);
  });
  afterAll(async () => {
    await gw.close();
  });

  it('records the rule a message took, shown in /admin/messages and on its console page', async () => {
    const res = await send(gw, 'rt-brazil');
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    const smsId = res.json.sms_id as string;
    expect(await storedRow(gw, smsId)).toMatchObject({ route: 'main', route_rule: 1, route_rule_name: 'brazil', provider: 'sinch' });
    const listed = await gw.get(`/admin/messages?sms_id=${smsId}`, ADMIN);
    expect(listed.json.messages[0]).toMatchObject({ route: 'main', route_rule: 1, route_rule_name: 'brazil', provider: 'sinch' });
    const { cookie } = await signIn(gw);
    const page = await (await fetch(`${gw.url}/console/messages/${smsId}`, { headers: { cookie } })).text();
    expect(page).toContain('route main, rule 1 (brazil), member sinch');
    const search = await (await fetch(`${gw.url}/console?sms_id=${smsId}`, { headers: { cookie } })).text();
    expect(search).toContain('sinch <span class="muted">(main rule brazil)</span>');
  });

  it('records a rule without a name by its number, and the catch-all', async () => {
    const casino = await send(gw, 'rt-casino', { recipient: '+447400123456', activity: { id: 'rt-casino', brand_id: 'casino' } });
    expect(await storedRow(gw, casino.json.sms_id)).toMatchObject({ route: 'main', route_rule: 2, route_rule_name: null, provider: 'infobip' });
    const other = await send(gw, 'rt-other', { recipient: '+447400123456' });
    expect(await storedRow(gw, other.json.sms_id)).toMatchObject({ route: 'main', route_rule: 0, provider: 'sandbox' });
  });

  it('refuses a country not listed with 400 country_not_allowed, stores it refused, answers a retry the same, and counts it by country', async () => {
    const res = await send(gw, 'rt-de', { recipient: '+4915112345678' });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'country_not_allowed', error: expect.stringMatching(/^recipient: lies in DE.*routing\.countries: BR, GB/) });
    expect(await storedRow(gw, res.json.sms_id)).toMatchObject({ state: 'rejected', error_code: 'country_not_allowed', provider_message_id: null });
    const again = await send(gw, 'rt-de', { recipient: '+4915112345678' });
    expect(again).toMatchObject({ status: 400, json: { code: 'country_not_allowed', sms_id: res.json.sms_id } });
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: ADMIN })).text();
    // Each refused request counts, the CRM's retry too: the counter tells how much is being refused, not how many ids.
    expect(metrics).toContain('sms_gateway_destination_refusals_total{country="DE",reason="country_not_allowed"} 2');
    const { cookie } = await signIn(gw);
    const page = await (await fetch(`${gw.url}/console/routing`, { headers: { cookie } })).text();
    expect(page).toMatch(/<tr data-country="DE"><td>DE<\/td><td>country_not_allowed<\/td><td>2<\/td>/);
  });

  it('refuses a premium-rate number in an allowed country, in a batch as `failed` with its code', async () => {
    const res = await gw.post('/channels/sms/batch', [
      smsMessage('rt-premium', { provider_name: 'promo', recipient: '+449098790123' }),
      smsMessage('rt-ok', { provider_name: 'promo', recipient: BR }),
    ]);
    expect(res.status).toBe(200);
    expect(res.json.failed).toEqual([expect.objectContaining({ id: 'rt-premium', code: 'number_type_not_allowed' })]);
    expect(res.json.successful).toEqual([expect.objectContaining({ id: 'rt-ok' })]);
  });

  it('suspends a member, then every member (503, nothing sent), audited; resumes', async () => {
    const suspend = await change(gw, { action: 'suspend', route: 'main', member: 'sinch' });
    expect(suspend).toMatchObject({ status: 200, json: { target: 'member:main/sinch', from: null, to: { suspended: true } } });
    const moved = await send(gw, 'rt-moved');
    expect(await storedRow(gw, moved.json.sms_id)).toMatchObject({ route_rule: 1, provider: 'infobip' });

    expect((await change(gw, { action: 'suspend', provider: 'infobip' })).status).toBe(200);
    const none = await send(gw, 'rt-none');
    expect(none.status).toBe(503);
    expect(none.json.error).toMatch(/every member is suspended \(sinch, infobip\)/);
    // Named directly, a suspended provider answers 503 too: the CRM retries.
    expect((await gw.post('/channels/sms/single', smsMessage('rt-direct', { provider_name: 'infobip', recipient: BR }))).status).toBe(503);

    const routing = await gw.get('/admin/routing', ADMIN);
    expect(routing.json.controls.map((c: { target: string }) => c.target)).toEqual(['member:main/sinch', 'provider:infobip']);
    expect(routing.json.audit[0]).toMatchObject({
      actor: expect.stringMatching(/^admin-key:[0-9a-f]{8}$/),
      target: 'provider:infobip',
      from: null,
      to: { suspended: true },
    });

    await change(gw, { action: 'resume', provider: 'infobip' });
    await change(gw, { action: 'resume', route: 'main', member: 'sinch' });
    const retried = await send(gw, 'rt-none');
    expect(retried.status).toBe(200);
    expect(await storedRow(gw, retried.json.sms_id)).toMatchObject({ provider: 'sinch' });
    expect((await gw.get('/admin/routing', ADMIN)).json.audit[0]).toMatchObject({ target: 'member:main/sinch', from: { suspended: true }, to: null });
  });

  it("changes a rule's weights, and clears them back to the file's", async () => {
    const set = await change(gw, { action: 'set_weights', route: 'main', rule: 'brazil', weights: { sinch: 0, infobip: 1 } });
    expect(set).toMatchObject({ status: 200, json: { target: 'weights:main/brazil', from: null, to: { sinch: 0, infobip: 1 } } });
    expect(await storedRow(gw, (await send(gw, 'rt-weights')).json.sms_id)).toMatchObject({ route_rule: 1, provider: 'infobip' });
    await change(gw, { action: 'clear_weights', route: 'main', rule: 'brazil' });
    expect(await storedRow(gw, (await send(gw, 'rt-weights-cleared')).json.sms_id)).toMatchObject({ provider: 'sinch' });
    // The catch-all is a failover list: weights there would never be read.
    expect(await change(gw, { action: 'set_weights', route: 'main', rule: 'catch-all', weights: { sandbox: 1 } })).toMatchObject({
      status: 400,
      json: { code: 'not_weighted' },
    });
  });

  it('refuses a change that names nothing configured, naming the field', async () => {
    expect(await change(gw, { action: 'set_members', route: 'main', rule: 'nope', members: ['sinch'] })).toMatchObject({
      status: 400,
      json: { code: 'unknown_rule', error: expect.stringMatching(/^rule: "nope"/) },
    });
    expect(await change(gw, { action: 'set_members', route: 'main', rule: 'brazil', members: ['main'] })).toMatchObject({
      status: 400,
      json: { code: 'unknown_provider', error: expect.stringMatching(/^members\[0\]/) },
    });
    expect(await change(gw, { action: 'jump' })).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^action:/) } });
  });

  it("switches a rule's members from the console, audited as the console session", async () => {
    const { cookie, csrf } = await signIn(gw);
    const post = await fetch(`${gw.url}/console/routing`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie },
      body: new URLSearchParams({ csrf, action: 'set_members', route: 'main', rule: 'brazil', members: 'infobip' }),
    });
    expect(post.status).toBe(303);
    const moved = await send(gw, 'rt-console');
    expect(await storedRow(gw, moved.json.sms_id)).toMatchObject({ route_rule: 1, provider: 'infobip' });
    const page = await (await fetch(`${gw.url}/console/routing`, { headers: { cookie } })).text();
    expect(page).toMatch(/<td>console:[0-9a-f]{8}<\/td><td>members:main\/brazil<\/td><td class="text">—<\/td><td class="text">\[&quot;infobip&quot;\]<\/td>/);
    await change(gw, { action: 'clear_members', route: 'main', rule: 'brazil' });
  });
});

describe('two instances on one PostgreSQL database', () => {
  let dir: string;
  const gateways: TestGateway[] = [];
  const start = async () => {
    const gw = await startTestGateway({ ...routingConfig, database: { url: postgresDatabaseUrl(dir) } }, { dir });
    gateways.push(gw);
    return gw;
  };
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-routing-pg-'));
  });
  afterAll(async () => {
    for (const gw of gateways) await gw.close();
    await dropPostgresDatabase(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a suspension made through one instance is followed by the other within control_poll, and by an instance started later', async () => {
    const a = await start();
    const b = await start();
    expect(await storedRow(b, (await send(b, 'pg-before')).json.sms_id)).toMatchObject({ provider: 'sinch' });
    expect((await change(a, { action: 'suspend', route: 'main', member: 'sinch' })).status).toBe(200);
    let attempt = 0;
    await waitFor(
      async () => (await storedRow(b, (await send(b, `pg-after-${attempt++}`)).json.sms_id)).provider === 'infobip',
      5_000,
      'the second instance to follow the suspension',
    );
    await b.close();
    gateways.splice(gateways.indexOf(b), 1);
    // Stored in the ledger: a new instance obeys it from its first message.
    const c = await start();
    expect(await storedRow(c, (await send(c, 'pg-restart')).json.sms_id)).toMatchObject({ provider: 'infobip' });
    await change(c, { action: 'resume', route: 'main', member: 'sinch' });
    await waitFor(async () => (await storedRow(a, (await send(a, `pg-resumed-${attempt++}`)).json.sms_id)).provider === 'sinch', 5_000, 'the resume');
  });
});

describe('SIGHUP', () => {
  it("reloads the file's rules without a restart, and refuses a bad file keeping the old rules", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-routing-hup-'));
    const document = testConfigDocument(dir, { ...routingConfig, log: { level: 'info' } });
    const file = writeConfig(dir, document);
    const serve = await startServe(file);
    const post = async (id: string) => {
      const res = await fetch(`${serve.url}/channels/sms/single`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
        body: JSON.stringify(smsMessage(id, { provider_name: 'promo', recipient: BR })),
      });
      return { status: res.status, json: (await res.json()) as { sms_id: string } };
    };
    const providerOf = async (smsId: string) => {
      const res = await fetch(`${serve.url}/admin/messages?sms_id=${smsId}`, { headers: ADMIN });
      return ((await res.json()) as { messages: Array<{ provider: string }> }).messages[0]!.provider;
    };
    try {
      expect(await providerOf((await post('hup-1')).json.sms_id)).toBe('sinch');
      const main = (document.providers as Record<string, { rules: Array<{ members: string[]; weights?: Record<string, number> }> }>).main!;
      main.rules[0]!.members = ['infobip'];
      main.rules[0]!.weights = { infobip: 1 };
      writeFileSync(file, YAML.stringify(document));
      // Requests in flight while the file is read again are all answered: the reload drops none.
      const during = Array.from({ length: 30 }, (_, i) => post(`hup-during-${i}`));
      serve.child.kill('SIGHUP');
      expect((await Promise.all(during)).map((r) => r.status)).toEqual(Array(30).fill(200));
      await waitFor(() => serve.output().includes('configuration reloaded'), 10_000, 'the reload');
      expect(await providerOf((await post('hup-2')).json.sms_id)).toBe('infobip');

      // A rule after a catch-all: refused at load, so the reload is refused and the rules in force stay.
      main.rules.unshift({ members: ['sinch'] } as never);
      writeFileSync(file, YAML.stringify(document));
      serve.child.kill('SIGHUP');
      await waitFor(() => serve.output().includes('configuration reload refused'), 10_000, 'the refusal');
      expect(serve.output()).toMatch(/providers\.main\.rules\.1\.match/);
      expect(await providerOf((await post('hup-3')).json.sms_id)).toBe('infobip');
    } finally {
      serve.child.kill('SIGTERM');
      await new Promise((resolve) => serve.child.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
