/**
 * Events the gateway's own data changes cause, delivered to a fake Integration API: Registration, User Update,
 * User Blocks and User Consents from the admin API, POST /userconsents and `import users`; none for unchanged rows
 * and none from reconciliation.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImportUsers } from '../../../src/commands/import-users.js';
import { FakeIntegrationApi } from '../../fakes/crm-integration.js';
import { sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../../helpers/gateway.js';

const crm = new FakeIntegrationApi();
let gw: TestGateway;
const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

beforeAll(async () => {
  await crm.start();
  gw = await startTestGateway({ relay: { poll_interval: '10ms' }, crm: { integration: { url: crm.url } } });
});

afterAll(async () => {
  await gw.close();
  await crm.stop();
});

/** Every event of the user in the outbox, oldest first, as [type, status]. */
async function outboxOf(userId: string): Promise<string[]> {
  const page = await gw.get(`/admin/events?user_id=${encodeURIComponent(userId)}`, admin);
  return page.json.events.map((e: { type: string }) => e.type).reverse();
}

/** Every event in the outbox, all pages. */
async function countAllEvents(prefix = ''): Promise<number> {
  let n = 0;
  let cursor = '';
  for (;;) {
    const page = await gw.get(`/admin/events${cursor ? `?cursor=${cursor}` : ''}`, admin);
    n += page.json.events.filter((e: { user_id: string }) => e.user_id.startsWith(prefix)).length;
    if (!page.json.next_cursor) return n;
    cursor = page.json.next_cursor;
  }
}

/** Waits until the CRM has every event the outbox holds for the user, and answers their types in arrival order. */
async function deliveredTo(userId: string): Promise<string[]> {
  const expected = (await outboxOf(userId)).length;
  await waitFor(() => crm.forUser(userId).length === expected, 10_000, `${expected} events of ${userId}`);
  const byPath = new Map([
    ['POST /v2/integration/user', 'USER_CREATE_V2'],
    ['PUT /v2/integration/user', 'USER_UPDATE_V2'],
    ['PUT /v2/integration/user/blocks', 'USER_BLOCK_V2'],
    ['PUT /v2/integration/user/consents', 'USER_CONSENTS_V2'],
  ]);
  return crm.forUser(userId).map((r) => byPath.get(`${r.method} ${r.path}`) ?? `${r.method} ${r.path}`);
}

describe('PUT /admin/users/:id', () => {
  it.each([
    ['a new user: Registration', 'self-1', [{}], ['USER_CREATE_V2']],
    ['the same record again: nothing', 'self-2', [{}, {}], ['USER_CREATE_V2']],
    ['a changed city: User Update', 'self-3', [{}, { city: 'Sliema' }], ['USER_CREATE_V2', 'USER_UPDATE_V2']],
    ['blocked: User Blocks only', 'self-4', [{}, { is_blocked: true }], ['USER_CREATE_V2', 'USER_BLOCK_V2']],
    ['a new exclusion note: User Blocks', 'self-5', [{}, { exclusion_note: 'self-excluded 6 months' }], ['USER_CREATE_V2', 'USER_BLOCK_V2']],
    ['excluded and renamed: both', 'self-6', [{}, { is_excluded: true, last_name: 'Other' }], ['USER_CREATE_V2', 'USER_UPDATE_V2', 'USER_BLOCK_V2']],
    [
      'consents changed in the body: User Consents',
      'self-7',
      [{ consents: [{ type: 'sms', opted_in: true }] }, { consents: [{ type: 'sms', opted_in: false }] }],
      ['USER_CREATE_V2', 'USER_CONSENTS_V2'],
    ],
    [
      'the same consents again: nothing',
      'self-8',
      [{ consents: [{ type: 'sms', opted_in: true }] }, { consents: [{ type: 'sms', opted_in: true }] }],
      ['USER_CREATE_V2'],
    ],
  ])('%s', async (_label, userId, bodies, expected) => {
    for (const overrides of bodies) expect((await gw.adminPut(`/admin/users/${userId}`, sampleUser(userId, overrides))).status).toBeLessThan(300);
    expect(await outboxOf(userId)).toEqual(expected);
    expect(await deliveredTo(userId)).toEqual(expected);
    const first = crm.forUser(userId)[0]!;
    expect(first.body).toEqual({ user_id: userId, timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), origin: 'sub.example.com' });
  });
});

describe('consent changes', () => {
  it('PUT /admin/users/:id/consents sends User Consents for a change and nothing for the same set again', async () => {
    await gw.adminPut('/admin/users/self-c1', sampleUser('self-c1', { origin: 'brand-2' }));
    await gw.adminPut('/admin/users/self-c1/consents', { consents: [{ type: 'email', opted_in: true }] });
    await gw.adminPut('/admin/users/self-c1/consents', { consents: [{ type: 'email', opted_in: true }] });
    await gw.adminPut('/admin/users/self-c1/consents', { consents: [{ type: 'email', opted_in: false }] });
    expect(await deliveredTo('self-c1')).toEqual(['USER_CREATE_V2', 'USER_CONSENTS_V2', 'USER_CONSENTS_V2']);
    expect(crm.forUser('self-c1')[1]!.body.origin).toBe('brand-2');
  });

  it('POST /userconsents/:id (the CRM’s unsubscribe flow) is followed by a User Consents event', async () => {
    await gw.adminPut('/admin/users/self-c2', sampleUser('self-c2'));
    const res = await gw.post('/userconsents/self-c2', { consents: [{ opted_in: false, type: 'sms' }] });
    expect(res.status).toBe(200);
    expect(await deliveredTo('self-c2')).toEqual(['USER_CREATE_V2', 'USER_CONSENTS_V2']);
    expect((await gw.post('/userconsents/nobody-here', { consents: [{ opted_in: false, type: 'sms' }] })).status).toBe(404);
    expect(await outboxOf('nobody-here')).toEqual([]);
  });

  it('reconciliation sends nothing', async () => {
    await gw.adminPut('/admin/users/self-r1', sampleUser('self-r1', { is_blocked: true, consents: [{ type: 'sms', opted_in: true }] }));
    const before = await countAllEvents();
    for (const field of ['blocked', 'excluded', 'consent_sms']) expect((await gw.post('/reconciliation', { field })).status).toBe(200);
    expect(await countAllEvents()).toBe(before);
    expect(await outboxOf('self-r1')).toEqual(['USER_CREATE_V2']);
  });
});

describe('import users', () => {
  it('announces new and changed users only: importing the same file again sends nothing', async () => {
    const sink = new Writable({ write: (_c, _e, done) => done() });
    const users = Array.from({ length: 300 }, (_, i) => sampleUser(`imp-ev-${i}`, { is_blocked: i === 7 }));
    const file = join(gw.dir, 'users.ndjson');
    writeFileSync(file, users.map((u) => JSON.stringify(u)).join('\n'));
    const countEvents = () => countAllEvents('imp-ev-');
    expect(await runImportUsers(gw.config, file, { out: sink, err: sink })).toBe(0);
    expect(await countEvents()).toBe(300);
    expect(await runImportUsers(gw.config, file, { out: sink, err: sink })).toBe(0);
    expect(await countEvents()).toBe(300);
    users[3] = sampleUser('imp-ev-3', { city: 'Gozo' });
    users[7] = sampleUser('imp-ev-7', { is_blocked: false });
    writeFileSync(file, users.map((u) => JSON.stringify(u)).join('\n'));
    expect(await runImportUsers(gw.config, file, { out: sink, err: sink })).toBe(0);
    expect(await countEvents()).toBe(302);
    expect(await deliveredTo('imp-ev-3')).toEqual(['USER_CREATE_V2', 'USER_UPDATE_V2']);
    expect(await deliveredTo('imp-ev-7')).toEqual(['USER_CREATE_V2', 'USER_BLOCK_V2']);
  });
});
