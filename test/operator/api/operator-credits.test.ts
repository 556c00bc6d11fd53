import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../../helpers/gateway.js';

/** The X-Crm-* headers of one CRM action, as the CRM sends them. */
function crmHeaders(activity: number, action: number, triggerHash: string) {
  return {
    'X-Crm-Id': '8a6f0c2e-4b51-4a8e-9d6b-0f3c2a1b7e90',
    'X-Crm-Activityid': String(activity),
    'X-Crm-Actionid': String(action),
    'X-Crm-Actiongroupid': '77',
    'X-Crm-Actioncommunicationprofileid': '5',
    'X-Crm-Triggerhash': triggerHash,
    'X-Crm-Playeroriginid': '3',
  };
}

async function creditsOf(gw: TestGateway, userId: string) {
  const res = await fetch(`${gw.url}/admin/credits?user_id=${userId}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
  return ((await res.json()) as { credits: any[] }).credits;
}

async function seed(gw: TestGateway, users: string[]) {
  for (const id of users) await gw.adminPut(`/admin/users/${id}`, sampleUser(id));
  await gw.adminPut('/admin/bonuses', [{ text: 'FS50: Fifty spins', value: 'FS50' }]);
}

describe('one-action rule on one instance', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
    await seed(gw, ['p-1', 'p-2', 'p-3', 'p-4']);
  });
  afterAll(async () => gw.close());

  it('credits once for 20 identical concurrent requests, and all of them get the same answer', async () => {
    const headers = crmHeaders(1001, 2002, 'a3f1c9e2b7d44f0e9a1b2c3d4e5f6a7b');
    const answers = await Promise.all(Array.from({ length: 20 }, () => gw.post('/bonus/credit', { user_id: 'p-1', bonus_code: 'FS50' }, headers)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.json.credit_id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await creditsOf(gw, 'p-1')).toHaveLength(1);
  });

  it('treats another trigger hash, action or user as another action', async () => {
    const body = { user_id: 'p-2', bonus_code: 'FS50' };
    await gw.post('/bonus/credit', body, crmHeaders(1, 1, 'hash-a'));
    await gw.post('/bonus/credit', body, crmHeaders(1, 1, 'hash-b'));
    await gw.post('/bonus/credit', body, crmHeaders(1, 2, 'hash-a'));
    await gw.post('/bonus/credit', { ...body, user_id: 'p-3' }, crmHeaders(1, 1, 'hash-a'));
    expect(await creditsOf(gw, 'p-2')).toHaveLength(3);
    expect(await creditsOf(gw, 'p-3')).toHaveLength(1);
  });

  it('applies the rule to funds credits and answers a repeat with the first credit', async () => {
    const body = { user_id: 'p-4', bonus_code: 'FS50', amount: 10, currency: 'EUR' };
    const first = await gw.post('/bonus/credit/funds', body, crmHeaders(5, 6, 'h'));
    const again = await gw.post('/bonus/credit/funds', { ...body, amount: 99 }, crmHeaders(5, 6, 'h'));
    expect(again.json).toEqual(first.json);
    const credits = await creditsOf(gw, 'p-4');
    expect(credits).toHaveLength(1);
    expect(credits[0].amount).toBe(10);
  });

  it('stores the X-Crm-* references with each credit, typed as a bonus event carries them', async () => {
    const [credit] = await creditsOf(gw, 'p-1');
    expect(credit.crm_references).toEqual({
      id: '8a6f0c2e-4b51-4a8e-9d6b-0f3c2a1b7e90',
      action_id: 2002,
      action_group_id: 77,
      action_communication_profile_id: 5,
      activity_id: 1001,
      trigger_hash: 'a3f1c9e2b7d44f0e9a1b2c3d4e5f6a7b',
      player_origin_id: 3,
    });
  });

  it('credits every request that carries no CRM references (nothing identifies a repeat)', async () => {
    await gw.adminPut('/admin/users/p-5', sampleUser('p-5'));
    await gw.post('/bonus/credit', { user_id: 'p-5', bonus_code: 'FS50' });
    await gw.post('/bonus/credit', { user_id: 'p-5', bonus_code: 'FS50' });
    expect(await creditsOf(gw, 'p-5')).toHaveLength(2);
  });

  it('keeps no credit for a refused request, so a later repeat can still succeed', async () => {
    const headers = crmHeaders(9, 9, 'later');
    const refused = await gw.post('/bonus/credit', { user_id: 'p-late', bonus_code: 'FS50' }, headers);
    expect([refused.status, refused.json.code]).toEqual([400, 404]);
    await gw.adminPut('/admin/users/p-late', sampleUser('p-late'));
    const retry = await gw.post('/bonus/credit', { user_id: 'p-late', bonus_code: 'FS50' }, headers);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('looks a user_id over 255 characters up like any other: no such user, 400 with code 404, nothing stored (docs/public-doors.md)', async () => {
    const long = 'u'.repeat(300);
    const answer = await gw.post('/bonus/credit', { user_id: long, bonus_code: 'FS50' }, crmHeaders(41, 42, 'long'));
    expect([answer.status, answer.json.code]).toEqual([400, 404]);
    expect(await creditsOf(gw, long)).toEqual([]);
    const code = await gw.post('/bonus/credit', { user_id: 'p-1', bonus_code: 'B'.repeat(300) }, crmHeaders(43, 44, 'long'));
    expect([code.status, code.json.code]).toEqual([400, 400]);
  });

  it.each([
    ['X-Crm-Activity-Id', 'X-Crm-Activityid'],
    ['X-Crm-Action-Id', 'X-Crm-Actionid'],
    ['X-Crm-Trigger-Hash', 'X-Crm-Triggerhash'],
    ['x_crm_triggerhash', 'X-Crm-Triggerhash'],
    ['X-CRM-Player-Origin-Id', 'X-Crm-Playeroriginid'],
  ])('refuses %s with 400 naming %s, and a repeat credits nothing either', async (given, expected) => {
    await gw.adminPut('/admin/users/p-spelt', sampleUser('p-spelt'));
    const { 'X-Crm-Activityid': activity, 'X-Crm-Actionid': action, 'X-Crm-Triggerhash': hash, ...rest } = crmHeaders(31, 32, 'spelt');
    const canonical: Record<string, string> = { ...rest, 'X-Crm-Activityid': activity, 'X-Crm-Actionid': action, 'X-Crm-Triggerhash': hash };
    const renamed = Object.fromEntries(Object.entries(canonical).map(([name, value]) => [name === expected ? given : name, value]));
    for (const _ of [1, 2]) {
      const answer = await gw.post('/bonus/credit', { user_id: 'p-spelt', bonus_code: 'FS50' }, renamed);
      expect([answer.status, answer.json.code]).toEqual([400, 400]);
      expect(answer.json.error).toContain(`header ${given.toLowerCase()} is not read: the CRM sends ${expected}`);
    }
    expect(await creditsOf(gw, 'p-spelt')).toEqual([]);
  });
});

describe('one-action rule across two instances sharing one database', () => {
  it('credits once when 20 identical requests are split between both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sms-gw-shared-'));
    const a = await startTestGateway({}, { dir });
    const b = await startTestGateway({}, { dir });
    try {
      await seed(a, ['shared-1']);
      const headers = crmHeaders(42, 43, 'shared-hash');
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).post('/bonus/credit', { user_id: 'shared-1', bonus_code: 'FS50' }, headers)),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
      expect(new Set(answers.map((r) => r.json.credit_id)).size).toBe(1);
      expect(await creditsOf(a, 'shared-1')).toHaveLength(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
