/**
 * The whole event catalogue over REST, and the delivery rules: the real gateway (HTTP server, ledger, worker) in
 * front of the fake Integration API. Each kind: a valid example reaches the CRM at its path and method with every
 * key it was sent; a bad one is refused with 400 naming the field. Then 2xx, refused 4xx, Retry-After,
 * relay.retry_client_errors, the push conversion webhook and per-kind overrides.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventCatalogue, resolveCatalogue } from '../../src/crm/event-catalogue.js';
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { catalogueExamples, relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeIntegrationApi();
let gw: TestGateway;
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

beforeAll(async () => {
  await crm.start();
  gw = await startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100 },
    crm: {
      integration: { url: `${crm.url}/crm-base`, headers: { authorization: 'Bearer integration' }, push: { username: 'crm-push', password: 'push-secret' } },
    },
  });
});

afterAll(async () => {
  await gw.close();
  await crm.stop();
});

beforeEach(() => {
  crm.okStatus = 200;
  crm.refuseWhen = undefined;
});

const delivered = (eventId: string) => waitFor(() => crm.accepted.find((r) => r.eventId === eventId), 10_000, `event ${eventId} at the CRM`);
const metric = async (pattern: RegExp) => Number(pattern.exec(await fetch(`${gw.url}/metrics`, { headers: admin }).then((r) => r.text()))?.[1] ?? 0);

describe('the catalogue', () => {
  const examples = catalogueExamples('u-cat');
  it('has an example for every kind', () => {
    expect(Object.keys(examples).sort()).toEqual(eventCatalogue.map((r) => r.kind).sort());
  });

  it.each(resolveCatalogue().map((r) => [r.kind, r] as const))(
    '%s: a valid example reaches the CRM at its path, unchanged; a bad one is refused naming the field',
    async (kind, route) => {
      const example = examples[kind]!;
      const body = { ...example.valid, added_by_crm_later: { x: [1, 2] } };
      const res = await relay(gw, route.method, route.path, body);
      expect(res.status, JSON.stringify(res.json)).toBe(202);
      const got = await delivered(res.json.event_id);
      expect(got.method).toBe(route.method);
      expect(got.path).toBe(`/crm-base${route.path}`);
      expect(got.body).toEqual(body);
      expect(got.headers.authorization).toBe(
        kind === 'push_conversion' ? `Basic ${Buffer.from('crm-push:push-secret').toString('base64')}` : 'Bearer integration',
      );

      const bad = await relay(gw, route.method, route.path, example.bad);
      expect(bad.status).toBe(400);
      expect(bad.json.error).toContain(example.error);
    },
  );
});

describe('delivery rules', () => {
  it.each([201, 202, 204])('a %i is delivered once, never sent again', async (status) => {
    crm.okStatus = status;
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent(`u-ok-${status}`));
    await delivered(res.json.event_id);
    await new Promise((r) => setTimeout(r, 300));
    expect(crm.arrivals.filter((r) => r.eventId === res.json.event_id)).toHaveLength(1);
    const event = await gw.get(`/admin/events?user_id=u-ok-${status}`, admin);
    expect(event.json.events[0]).toMatchObject({ status: 'sent', http_status: status });
  });

  it('a 400 dead-letters the event at once with the CRM answer, counts it, does not hold back the player, and a replay after the fix delivers it', async () => {
    const user = 'u-refused';
    const deadBefore = await metric(/^sms_gateway_crm_events_dead_lettered_total\{reason="refused"\} (\d+)/m);
    crm.refuseWhen = (r) => (r.body?.note === 'bad' ? { status: 400, body: { error: 'note: the CRM does not like it' } } : undefined);
    const first = await relay(gw, 'POST', '/v2/integration/user', thinEvent(user, { note: 'bad' }));
    const second = await relay(gw, 'PUT', '/v2/integration/user', thinEvent(user));
    const third = await relay(gw, 'PUT', '/v2/integration/user/blocks', thinEvent(user));
    // The later events go out in order, behind nothing.
    await delivered(third.json.event_id);
    expect(crm.accepted.filter((r) => r.body?.user_id === user).map((r) => r.eventId)).toEqual([second.json.event_id, third.json.event_id]);
    expect(crm.arrivals.filter((r) => r.eventId === first.json.event_id)).toHaveLength(1);
    const dead = (await gw.get(`/admin/events?user_id=${user}&status=dead`, admin)).json.events;
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ event_id: first.json.event_id, http_status: 400, attempts: 1 });
    expect(dead[0].last_error).toContain('note: the CRM does not like it');
    expect(await metric(/^sms_gateway_crm_events_dead_lettered_total\{reason="refused"\} (\d+)/m)).toBe(deadBefore + 1);

    // Shown on the console's dead events page with the CRM's answer.
    const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const page = await fetch(`${gw.url}/console/dead-events?user_id=${user}`, { headers: { cookie } }).then((r) => r.text());
    expect(page).toContain(first.json.event_id.slice(0, 8));
    expect(page).toContain('400');

    crm.refuseWhen = undefined;
    const replay = await gw.post('/admin/events/replay', { event_ids: [first.json.event_id] }, admin);
    expect(replay.json).toEqual({ replayed: 1 });
    await delivered(first.json.event_id);
  });

  it.each([408, 425, 429, 500, 503])('a %i is retried until taken', async (status) => {
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent(`u-retry-${status}`, { marker: status }));
    crm.refuseWhen = (r) => (r.body?.marker === status && crm.arrivals.filter((a) => a.body?.marker === status).length <= 2 ? { status } : undefined);
    await delivered(res.json.event_id);
    expect(crm.arrivals.filter((r) => r.eventId === res.json.event_id).length).toBeGreaterThanOrEqual(2);
  });

  it('honours Retry-After: the next attempt waits for it, not for the (shorter) backoff', async () => {
    crm.refuseWhen = (r) =>
      r.body?.user_id === 'u-after' && crm.arrivals.filter((a) => a.body?.user_id === 'u-after').length === 1 ? { status: 429, retryAfter: '1' } : undefined;
    const res = await relay(gw, 'POST', '/v2/integration/login', thinEvent('u-after'));
    const got = await delivered(res.json.event_id);
    const tries = crm.arrivals.filter((r) => r.eventId === res.json.event_id);
    expect(tries).toHaveLength(2);
    expect(got.at - tries[0]!.at).toBeGreaterThanOrEqual(950);
  });
});

describe('relay.retry_client_errors and per-kind overrides', () => {
  const other = new FakeIntegrationApi();
  let strict: TestGateway;
  beforeAll(async () => {
    await other.start();
    strict = await startTestGateway({
      relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 40, retry_client_errors: true, max_attempts: 3 },
      crm: { integration: { url: other.url, events: { payment: { path: '/v9/payments', method: 'PUT' }, user_tag: { path: '/v1/tags' } } } },
    });
  });
  afterAll(async () => {
    await strict.close();
    await other.stop();
  });

  it('retries a 400 up to relay.max_attempts, then dead-letters it', async () => {
    other.refuseWhen = (r) => (r.body?.user_id === 'u-strict' ? { status: 400 } : undefined);
    const res = await relay(strict, 'POST', '/v2/integration/login', thinEvent('u-strict'));
    await waitFor(async () => (await strict.get('/admin/events?user_id=u-strict&status=dead', admin)).json.events[0], 10_000, 'dead event');
    expect(other.arrivals.filter((r) => r.eventId === res.json.event_id)).toHaveLength(3);
    other.refuseWhen = undefined;
  });

  it('takes an event at the overridden method and path and sends it there; the default path is no longer served', async () => {
    const body = catalogueExamples('u-over').payment!.valid;
    const res = await relay(strict, 'PUT', '/v9/payments', body);
    expect(res.status).toBe(202);
    const got = await waitFor(() => other.accepted.find((r) => r.eventId === res.json.event_id));
    expect([got.method, got.path]).toEqual(['PUT', '/v9/payments']);
    expect((await relay(strict, 'POST', '/v1/integration/payment', body)).status).toBe(404);
    const tag = await relay(strict, 'POST', '/v1/tags', catalogueExamples('u-over').user_tag!.valid);
    expect((await waitFor(() => other.accepted.find((r) => r.eventId === tag.json.event_id))).path).toBe('/v1/tags');
  });
});
