/**
 * Hostile-input cases for findings 3, 4 and 6 of the review of the public doors, each against the real server: the
 * fake SMSC speaking real SMPP PDUs (test/fakes/smpp.ts), the Twilio fake signing inbound webhooks, the built CLI.
 * Every case here failed on main 387be1b: a texted `id:… stat:UNDELIV` was taken as a receipt and STOP over SMPP
 * was dropped (3); expired or foreign tokens of ours counted as guesses, /mo was refused 429, and a guesser behind
 * a proxy locked everyone out (4); production started with relay keys `dev-crm-api-key` and `x`, and said nothing
 * of clear-text CRM URLs, a public /metrics or plain-TCP SMPP (6).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import { findUnsafeSettings } from '../src/config/production-checks.js';
import { FakeCrm } from './fakes/crm.js';
import { startSmppFake, type SmppFake } from './fakes/smpp.js';
import { startTwilioFake, type TwilioFake } from './fakes/twilio.js';
import { CLI, runCli, startServe, writeConfig } from './helpers/child.js';
import { sampleUser } from './helpers/crm-schemas.js';
import { smsMessage, startTestGateway, TEST_API_KEY, waitFor, type TestGateway } from './helpers/gateway.js';

const PLAYER_NUMBER = '447700900111';
const receiptText = (id: string, stat: string) => `id:${id} sub:001 dlvrd:001 submit date:2611240400 done date:2611240400 stat:${stat} err:001 text:`;

async function loadPlayer(gw: TestGateway, id: string, mobile = `+${PLAYER_NUMBER}`) {
  const user = sampleUser(id, { mobile_prefix: '', mobile, consents: [{ type: 'sms', opted_in: true }], consents_updated_at: new Date().toISOString() });
  expect((await gw.adminPut(`/admin/users/${id}`, user)).status).toBeLessThan(300);
}

describe('finding 3: anyone who can text the SMPP number forges receipts', () => {
  const crm = new FakeCrm();
  let smsc: SmppFake;
  let gw: TestGateway;
  const conversionsFor = (smsId: string) => crm.conversions.filter((c) => c.sms_id === smsId);
  const messageRow = (smsId: string) => gw.gateway.ledger.db.selectFrom('messages').selectAll().where('sms_id', '=', smsId).executeTakeFirstOrThrow();
  const receiptRows = () => gw.gateway.ledger.db.selectFrom('receipts').selectAll().where('provider', '=', 'smpp').execute();
  /** A player's text, as the SMSC hands it on: esm_class 0, the sender's number international. */
  const textFromPhone = (text: string, from = '447700900222') => smsc.sendDeliverSm({ source_addr_ton: 1, source_addr_npi: 1, source_addr: from, destination_addr: 'Casino', esm_class: 0, short_message: text });

  beforeAll(async () => {
    await crm.start();
    smsc = await startSmppFake({ receipts: 'none' });
    gw = await startTestGateway({
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 100 },
      providers: { smpp: { type: 'smpp', host: smsc.host, port: smsc.port, system_id: smsc.systemId, password: smsc.password, rebind_min: '20ms', max_parked_receipts: 3 } },
    });
    await waitFor(() => smsc.boundSessions() === 1, 5_000, 'the bind');
  });
  afterAll(async () => {
    await gw?.close();
    await smsc?.close();
    await crm.stop();
  });

  it('a texted receipt for a sent message, or for an id not issued yet, changes no message; a flagged receipt still does', async () => {
    const first = await gw.post('/channels/sms/single', smsMessage('forge-1', { provider_name: 'smpp' }));
    expect(first.status).toBe(200);
    const firstId = smsc.submits.at(-1)!.messageId!;
    // The fake numbers its messages in order, so the next one's id is known before it is issued.
    const nextId = (parseInt(firstId, 16) + 1).toString(16);
    expect(await textFromPhone(receiptText(firstId, 'UNDELIV'))).toEqual([0]);
    expect(await textFromPhone(receiptText(nextId, 'UNDELIV'))).toEqual([0]);
    const second = await gw.post('/channels/sms/single', smsMessage('forge-2', { provider_name: 'smpp' }));
    expect(second.status).toBe(200);
    expect(smsc.submits.at(-1)!.messageId).toBe(nextId);

    expect(await receiptRows()).toEqual([]);
    expect((await messageRow(first.json.sms_id)).delivery_status).toBeNull();
    expect((await messageRow(second.json.sms_id)).delivery_status).toBeNull();
    // The forged texts were kept as what they are: a stranger's inbound messages.
    const inbound = await gw.gateway.ledger.db.selectFrom('inbound_messages').selectAll().where('from_number', '=', '+447700900222').execute();
    expect(inbound).toHaveLength(2);

    await smsc.sendReceipt(firstId, 'DELIVRD');
    await smsc.sendReceipt(nextId, 'DELIVRD', 'tlv');
    await waitFor(() => conversionsFor(first.json.sms_id).length > 0 && conversionsFor(second.json.sms_id).length > 0, 10_000, 'both conversions');
    expect([...conversionsFor(first.json.sms_id), ...conversionsFor(second.json.sms_id)].map((c) => c.delivery_status)).toEqual(['delivered', 'delivered']);
  });

  it('STOP over SMPP opts the player out, so the next send to them is refused', async () => {
    await loadPlayer(gw, 'smpp-tony');
    const before = await gw.post('/channels/sms/single', smsMessage('stop-before', { provider_name: 'smpp', activity: { id: 'stop-before', user_id: 'smpp-tony' } }));
    expect(before.status).toBe(200);
    expect(await textFromPhone(' stop ', PLAYER_NUMBER)).toEqual([0]);
    const after = await gw.post('/channels/sms/single', smsMessage('stop-after', { provider_name: 'smpp', activity: { id: 'stop-after', user_id: 'smpp-tony' } }));
    expect(after.status).toBe(400);
    expect(after.json.error).toBe('recipient: player "smpp-tony" has opted out of sms');
    expect(await textFromPhone('START', PLAYER_NUMBER)).toEqual([0]);
    expect((await gw.post('/channels/sms/single', smsMessage('start-after', { provider_name: 'smpp', activity: { id: 'start-after', user_id: 'smpp-tony' } }))).status).toBe(200);
  });

  it('flagged receipts for ids never issued stay parked at most max_parked_receipts; the oldest are set aside and counted', async () => {
    for (let i = 0; i < 5; i++) {
      expect(await smsc.sendDeliverSm({ esm_class: 0x04, short_message: receiptText(`nobody-${i}`, 'DELIVRD') })).toEqual([0]);
    }
    const rows = await receiptRows();
    const parked = rows.filter((r) => Number(r.matched) === 0).map((r) => r.provider_message_id);
    expect(parked).toEqual(['nobody-2', 'nobody-3', 'nobody-4']);
    const dropped = await gw.gateway.metrics.registry.getSingleMetric('sms_gateway_parked_receipts_dropped_total')!.get();
    expect(dropped.values.find((v) => v.labels.provider === 'smpp')?.value).toBe(2);
  });
});

describe('finding 4: the lockout locks out the CRM', () => {
  const BUDGET = 4;
  const OAUTH = { client_id: 'doors-crm', client_secret: 'doors-client-secret-0123456789abcdef', token_ttl_seconds: 600 };
  const tokenForm = { client_id: OAUTH.client_id, client_secret: OAUTH.client_secret, grant_type: 'client_credentials' };
  const noKey = { 'x-api-key': '' };
  let clock = Date.parse('2026-11-25T04:00:00Z');
  let twilio: TwilioFake;
  let gw: TestGateway;
  const token = async (target: TestGateway) => {
    const res = await target.post('/oauth/token', tokenForm, noKey);
    expect(res.status).toBe(200);
    return res.json.access_token as string;
  };
  const userdetails = (target: TestGateway, accessToken: string, headers: Record<string, string> = {}) =>
    target.get('/userdetails/doors-u', { ...noKey, authorization: `Bearer ${accessToken}`, ...headers });
  const guess = (target: TestGateway, headers: Record<string, string> = {}) => target.post('/channels/sms/batch', [smsMessage(`guess-${Math.random()}`)], { 'x-api-key': 'guess', ...headers });

  beforeAll(async () => {
    twilio = await startTwilioFake();
    gw = await startTestGateway(
      {
        server: { trusted_proxies: ['127.0.0.1/32'] },
        auth: { mode: 'oauth', oauth: OAUTH, failure_budget: BUDGET, failure_window: '1m' },
        providers: { tw: { type: 'twilio', base_url: twilio.url, account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+447700900999' } },
      },
      { now: () => clock },
    );
    await loadPlayer(gw, 'doors-u');
  });
  afterAll(async () => {
    await gw?.close();
    await twilio?.close();
  });

  it('20 calls in flight with an expired token get 401, not 429, and the next token request works', async () => {
    clock += 3_600_000;
    const old = await token(gw);
    clock += 601_000;
    const answers = await Promise.all(Array.from({ length: 20 }, () => userdetails(gw, old)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(401));
    expect(answers[0]!.json).toEqual({ error: 'the token has expired; request a new one', code: 401 });
    const fresh = await token(gw);
    expect((await userdetails(gw, fresh)).status).toBe(200);
  });

  it('after a restart without signing_secret the old process\'s tokens get 401, not 429, and a new token works', async () => {
    clock += 3_600_000;
    const beforeRestart = await token(gw);
    const restarted = await startTestGateway({ auth: { mode: 'oauth', oauth: OAUTH, failure_budget: BUDGET, failure_window: '1m' } }, { now: () => clock });
    try {
      await loadPlayer(restarted, 'doors-u');
      const answers = await Promise.all(Array.from({ length: 20 }, () => userdetails(restarted, beforeRestart)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(401));
      expect((await userdetails(restarted, await token(restarted))).status).toBe(200);
      // A token that is not ours in shape is still a guess.
      for (let i = 0; i < BUDGET; i++) expect((await userdetails(restarted, 'guess.guess.guess')).status).toBe(401);
      expect((await restarted.post('/oauth/token', tokenForm, noKey)).status).toBe(429);
    } finally {
      await restarted.close();
    }
  });

  it('a signed STOP to /mo after 30 bad guesses from the same address still lands', async () => {
    clock += 3_600_000;
    for (let i = 0; i < 30; i++) expect([401, 429]).toContain((await guess(gw)).status);
    expect((await guess(gw)).status).toBe(429);
    const res = await twilio.postInbound(`${gw.url}/mo/tw`, { from: `+${PLAYER_NUMBER}`, to: '+447700900999', body: 'STOP' });
    expect(res.status).toBe(200);
    const stops = await gw.gateway.ledger.db.selectFrom('inbound_messages').selectAll().where('from_number', '=', `+${PLAYER_NUMBER}`).where('action', '=', 'opt_out').execute();
    expect(stops.map((m) => JSON.parse(m.matched_user_ids))).toEqual([['doors-u']]);
  });

  it('a guesser behind a trusted proxy locks out only its own X-Forwarded-For address', async () => {
    clock += 3_600_000;
    const guesser = { 'x-forwarded-for': '203.0.113.9' };
    for (let i = 0; i < BUDGET; i++) expect((await guess(gw, guesser)).status).toBe(401);
    expect((await gw.post('/oauth/token', tokenForm, { ...noKey, ...guesser })).status).toBe(429);
    expect((await gw.post('/channels/sms/batch', [smsMessage('guesser-right-key')], { 'x-api-key': TEST_API_KEY, ...guesser })).status).toBe(429);
    // What a client writes into the header itself is left of the proxy's entry and is not believed.
    expect((await gw.get('/userdetails/doors-u', { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' })).status).toBe(429);
    const crmHop = { 'x-forwarded-for': '198.51.100.7' };
    expect((await userdetails(gw, await tokenVia(crmHop), crmHop)).status).toBe(200);
    expect((await gw.post('/channels/sms/batch', [smsMessage('behind-proxy')], { 'x-api-key': TEST_API_KEY, ...crmHop })).status).toBe(200);
  });
  const tokenVia = async (headers: Record<string, string>) => {
    const res = await gw.post('/oauth/token', tokenForm, { ...noKey, ...headers });
    return res.status === 200 ? (res.json.access_token as string) : 'refused';
  };

  it('without trusted_proxies the header is ignored: a guesser cannot rotate it to escape the limit', async () => {
    const direct = await startTestGateway({ auth: { failure_budget: BUDGET, failure_window: '1m' } });
    try {
      for (let i = 0; i < BUDGET; i++) expect((await guess(direct, { 'x-forwarded-for': `203.0.113.${i}` })).status).toBe(401);
      expect((await guess(direct, { 'x-forwarded-for': '203.0.113.200' })).status).toBe(429);
    } finally {
      await direct.close();
    }
  });

  it('auth.trusted_addresses are never locked out, whatever fails from them', async () => {
    const trusted = await startTestGateway({ auth: { failure_budget: BUDGET, failure_window: '1m', trusted_addresses: ['127.0.0.0/8', '::1'] } });
    try {
      for (let i = 0; i < 30; i++) expect((await guess(trusted)).status).toBe(401);
      expect((await trusted.post('/channels/sms/batch', [smsMessage('trusted-crm')])).status).toBe(200);
    } finally {
      await trusted.close();
    }
  });
});

describe('finding 6: production takes weak relay keys and says nothing of clear text', () => {
  const SAFE = {
    server: { environment: 'production', host: '127.0.0.1', port: 0, public_url: 'https://sms-gw.example.com' },
    auth: { api_keys: ['a-long-random-crm-key-0001'] },
    admin: { api_key: 'a-long-random-admin-key-0001' },
    crm: { webhook_url: 'https://crm.example.com', webhook_api_key: 'a-long-random-webhook-key-01' },
    providers: { sandbox: { type: 'sandbox', receipt_secret: 'sandbox-receipt-secret-0001' } },
    log: { level: 'info' },
  };
  let dir: string;
  beforeAll(() => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm test does it in pretest)`);
    dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-doors-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses relay.api_keys [dev-crm-api-key, "x"] like any other weak key: serve exits 78 naming both', async () => {
    const file = writeConfig(dir, { ...SAFE, database: { url: `sqlite:${join(dir, 'weak.db')}` }, relay: { api_keys: ['dev-crm-api-key', 'x'] } }, 'weak.yaml');
    const findings = findUnsafeSettings(parseConfig({ ...SAFE, relay: { api_keys: ['dev-crm-api-key', 'x'] } }, {}));
    expect(findings.map((f) => [f.key, f.severity])).toEqual([['relay.api_keys[0]', 'refuse'], ['relay.api_keys[1]', 'refuse']]);
    const run = await runCli(['serve', '--config', file]);
    expect(run.code).toBe(78);
    expect(run.stderr).toContain('  - relay.api_keys[0] is a shipped development value');
    expect(run.stderr).toContain('  - relay.api_keys[1] is shorter than 16 characters');
    expect(existsSync(join(dir, 'weak.db'))).toBe(false);
  });

  it('starts in production with plain-http CRM URLs, a public /metrics and plain-TCP SMPP, and warns about each at start', async () => {
    const doc = {
      ...SAFE,
      database: { url: `sqlite:${join(dir, 'clear.db')}` },
      crm: { ...SAFE.crm, webhook_url: 'http://crm.example.com/hooks', integration: { url: 'http://crm.example.com/integration' } },
      metrics: { public: true },
      // Nothing listens there: the bind keeps retrying in the background, which is all this start needs.
      providers: { ...SAFE.providers, aggregator: { type: 'smpp', host: '127.0.0.1', port: 9, system_id: 'gw', password: 'pw' } },
    };
    const keys = findUnsafeSettings(parseConfig(doc, {})).map((f) => [f.key, f.severity]);
    expect(keys).toEqual([['crm.webhook_url', 'warn'], ['crm.integration.url', 'warn'], ['metrics.public', 'warn'], ['providers.aggregator.tls', 'warn']]);
    const serve = await startServe(writeConfig(dir, doc, 'clear.yaml'));
    try {
      const warnings = serve
        .output()
        .split('\n')
        .filter((line) => line.includes('check this setting'))
        .map((line) => (JSON.parse(line) as { msg: string; level: number }).msg);
      expect(warnings).toEqual([
        expect.stringMatching(/^check this setting: crm\.webhook_url .*plain http/),
        expect.stringMatching(/^check this setting: crm\.integration\.url .*plain http/),
        expect.stringMatching(/^check this setting: metrics\.public is on/),
        expect.stringMatching(/^check this setting: providers\.aggregator\.tls is off/),
      ]);
      expect((await fetch(`${serve.url}/healthz`)).status).toBe(200);
    } finally {
      serve.child.kill('SIGTERM');
      await new Promise((resolve) => serve.child.once('close', resolve));
    }
  });
});
