import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminErrorBody, crmBlocks, crmBonusList, crmConsents, crmReconciliation, crmUserDetails, errorBody, sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  expect((await gw.adminPut('/admin/users/u-1', sampleUser('u-1', { consents: [{ type: 'sms', opted_in: true }] }))).status).toBe(201);
  expect((await gw.adminPut('/admin/users/u-blocked', sampleUser('u-blocked', { is_blocked: true, block_note: 'chargeback' }))).status).toBe(201);
  expect(
    (
      await gw.adminPut('/admin/bonuses', [
        { text: 'WELCOME: Welcome pack', value: 'WELCOME' },
        { text: 'CASH10: Cashback', value: 'CASH10' },
      ])
    ).status,
  ).toBe(200);
});
afterAll(async () => gw.close());

describe('GET /userdetails/:userid', () => {
  it('answers the stored record in the CRM shape, never cached', async () => {
    const res = await gw.get('/userdetails/u-1');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(crmUserDetails.parse(res.json)).toEqual(sampleUser('u-1'));
  });

  it('answers 404 with an error for an unknown user', async () => {
    const res = await gw.get('/userdetails/nobody');
    expect(res.status).toBe(404);
    expect(errorBody.parse(res.json).error).toMatch(/nobody/);
  });

  it('answers verified_at "" for a player loaded without it, or with null', async () => {
    const { verified_at: _left, ...without } = sampleUser('u-unverified');
    expect((await gw.adminPut('/admin/users/u-unverified', without)).status).toBe(201);
    expect((await gw.adminPut('/admin/users/u-null-verified', sampleUser('u-null-verified', { verified_at: null }))).status).toBe(201);
    for (const id of ['u-unverified', 'u-null-verified']) {
      const res = await gw.get(`/userdetails/${id}`);
      expect(crmUserDetails.parse(res.json).verified_at).toBe('');
    }
  });

  it("leaves deleted_at out by default, even for a deleted player: the CRM maker's schema allows no key outside its list", async () => {
    expect((await gw.adminPut('/admin/users/u-gone', sampleUser('u-gone', { deleted_at: '2020-05-01T10:00:00Z' }))).status).toBe(201);
    const res = await gw.get('/userdetails/u-gone');
    expect(res.status).toBe(200);
    expect('deleted_at' in res.json).toBe(false);
    expect(crmUserDetails.parse(res.json).user_id).toBe('u-gone');
  });

  it('with operator.send_deleted_at, sends deleted_at only for a deleted player', async () => {
    const on = await startTestGateway({ operator: { send_deleted_at: true } });
    try {
      expect((await on.adminPut('/admin/users/u-gone', sampleUser('u-gone', { deleted_at: '2020-05-01T10:00:00Z' }))).status).toBe(201);
      expect((await on.adminPut('/admin/users/u-1', sampleUser('u-1'))).status).toBe(201);
      expect(crmUserDetails.parse((await on.get('/userdetails/u-gone')).json).deleted_at).toBe('2020-05-01T10:00:00Z');
      expect('deleted_at' in (await on.get('/userdetails/u-1')).json).toBe(false);
    } finally {
      await on.close();
    }
  });

  it('keeps optional fields and segmentation, and leaves null optional fields out', async () => {
    const user = sampleUser('u-opt', { verified_at: '2016-01-01T10:00:00+01:00', deleted_at: null, segmentation: { vip_level: 15, special: '3D' } });
    expect((await gw.adminPut('/admin/users/u-opt', user)).status).toBe(201);
    const res = await gw.get('/userdetails/u-opt');
    const body = crmUserDetails.parse(res.json);
    expect(body.verified_at).toBe('2016-01-01T10:00:00+01:00');
    expect(body.segmentation).toEqual({ vip_level: 15, special: '3D' });
    expect('deleted_at' in res.json).toBe(false);
  });
});

describe('GET /userblocks/:userid', () => {
  it('lists both block types with their notes', async () => {
    const res = await gw.get('/userblocks/u-blocked');
    expect(res.status).toBe(200);
    expect(crmBlocks.parse(res.json).blocks).toEqual([
      { active: true, type: 'Blocked', note: 'chargeback' },
      { active: false, type: 'Excluded', note: '' },
    ]);
  });

  it('answers 404 for an unknown user', async () => {
    expect((await gw.get('/userblocks/nobody')).status).toBe(404);
  });
});

describe('GET and POST /userconsents/:userid', () => {
  it('always answers all six types; types never set are opted out', async () => {
    const res = await gw.get('/userconsents/u-1');
    expect(res.status).toBe(200);
    const { consents } = crmConsents.parse(res.json);
    expect(consents.filter((c) => c.opted_in).map((c) => c.type)).toEqual(['sms']);
  });

  it('applies an opt-out sent the way the unsubscribe page sends it, ignoring unknown fields', async () => {
    await gw.adminPut('/admin/users/u-1/consents', {
      consents: [
        { type: 'email', opted_in: true },
        { type: 'sms', opted_in: true },
      ],
    });
    const post = await gw.post('/userconsents/u-1', { consents: [{ opted_in: false, type: 'email', reason: 'page' }], source: 'unsubscribe' });
    expect(post.status).toBe(200);
    const { consents } = crmConsents.parse((await gw.get('/userconsents/u-1')).json);
    expect(consents.find((c) => c.type === 'email')!.opted_in).toBe(false);
    expect(consents.find((c) => c.type === 'sms')!.opted_in).toBe(true);
  });

  it('accepts all six entries at once, as an older CRM version sent them', async () => {
    const six = ['email', 'sms', 'telephone', 'postMail', 'siteNotification', 'pushNotification'].map((type, i) => ({ type, opted_in: i % 2 === 0 }));
    expect((await gw.post('/userconsents/u-1', { consents: six })).status).toBe(200);
    expect(crmConsents.parse((await gw.get('/userconsents/u-1')).json).consents).toEqual(six.map(({ type, opted_in }) => ({ opted_in, type })));
  });

  it.each([
    ['an unknown consent type', { consents: [{ opted_in: false, type: 'fax' }] }, /consents\.0\.type/],
    ['opted_in that is not a boolean', { consents: [{ opted_in: 'no', type: 'sms' }] }, /consents\.0\.opted_in/],
    ['no consents array', { opted_in: false }, /consents/],
  ])('answers 400 naming the field for %s', async (_label, body, field) => {
    const res = await gw.post('/userconsents/u-1', body);
    expect(res.status).toBe(400);
    expect(errorBody.parse(res.json).error).toMatch(field);
  });

  it('answers 404 for an unknown user on GET and POST', async () => {
    expect((await gw.get('/userconsents/nobody')).status).toBe(404);
    expect((await gw.post('/userconsents/nobody', { consents: [{ opted_in: false, type: 'sms' }] })).status).toBe(404);
  });
});

describe('GET /bonus/list', () => {
  it('answers the loaded list in the Data/Success/Errors wrapper, in the loaded order', async () => {
    const res = await gw.get('/bonus/list');
    expect(res.status).toBe(200);
    expect(crmBonusList.parse(res.json)).toEqual({
      Data: [
        { text: 'WELCOME: Welcome pack', value: 'WELCOME' },
        { text: 'CASH10: Cashback', value: 'CASH10' },
      ],
      Success: true,
      Errors: [],
    });
  });
});

describe('POST /bonus/credit and /bonus/credit/funds', () => {
  it('credits a known bonus to a known user', async () => {
    const res = await gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'WELCOME', validity_amount: 7 });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ Success: true, Errors: [], credit_id: expect.any(String) });
  });

  it('credits funds and keeps amount and currency', async () => {
    const res = await gw.post('/bonus/credit/funds', { user_id: 'u-1', bonus_code: 'CASH10', amount: 12.5, currency: 'eur' });
    expect(res.status).toBe(200);
    const credits = await fetch(`${gw.url}/admin/credits?user_id=u-1`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } }).then(
      (r) => r.json() as Promise<{ credits: unknown[] }>,
    );
    expect(credits.credits[0]).toMatchObject({ kind: 'funds', bonus_code: 'CASH10', amount: 12.5, currency: 'EUR', state: 'done' });
  });

  it.each([
    ["an amount of 0 (the schema's minimum)", 0, 'EUR', 'EUR'],
    ['a currency of four letters', 5, 'USDT', 'USDT'],
    ['a currency in mixed case, kept as sent', 5, 'mBTC', 'mBTC'],
  ])("credits funds with %s, as the CRM's schema allows", async (_label, amount, currency, stored) => {
    const user = `u-funds-${currency}-${amount}`;
    expect((await gw.adminPut(`/admin/users/${user}`, sampleUser(user))).status).toBe(201);
    const res = await gw.post('/bonus/credit/funds', { user_id: user, bonus_code: 'CASH10', amount, currency });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    const credits = await fetch(`${gw.url}/admin/credits?user_id=${user}`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } }).then(
      (r) => r.json() as Promise<{ credits: unknown[] }>,
    );
    expect(credits.credits[0]).toMatchObject({ kind: 'funds', amount, currency: stored });
  });

  it.each([
    ['/bonus/credit', { bonus_code: 'WELCOME' }, 400, /user_id: is required/],
    ['/bonus/credit', { user_id: 'u-1', bonus_code: 'NOPE' }, 400, /bonus_code: "NOPE"/],
    // The interface names 400 and 500 only: an unknown user is 400, with the finer reason in code (404).
    ['/bonus/credit', { user_id: 'nobody', bonus_code: 'WELCOME' }, 400, /nobody/],
    ['/bonus/credit/funds', { user_id: 'u-1', bonus_code: 'CASH10', amount: -1, currency: 'EUR' }, 400, /amount/],
    ['/bonus/credit/funds', { user_id: 'u-1', bonus_code: 'CASH10', amount: -0.01, currency: 'EUR' }, 400, /amount: must be 0 or more/],
    ['/bonus/credit/funds', { user_id: 'u-1', bonus_code: 'CASH10', amount: 5, currency: 7 }, 400, /currency: must be a string/],
    ['/bonus/credit/funds', { user_id: '', bonus_code: 'CASH10', amount: 5, currency: 'EUR' }, 400, /user_id: must be a non-empty string/],
    ['/bonus/credit/funds', { user_id: 'u-1', bonus_code: 'CASH10', currency: 'EUR' }, 400, /amount: is required/],
  ])('%s with %j answers %i naming the problem', async (path, body, status, message) => {
    const res = await gw.post(path, body);
    expect(res.status).toBe(status);
    expect(errorBody.parse(res.json).error).toMatch(message);
  });

  it('answers 400 for a body that is not JSON, with code 415, and for unparsable JSON, with code 400', async () => {
    const notJson = await gw.post('/bonus/credit', 'user_id=u-1', { 'content-type': 'text/plain' });
    expect([notJson.status, errorBody.parse(notJson.json).code]).toEqual([400, 415]);
    const unparsable = await gw.post('/bonus/credit', '{"user_id":');
    expect([unparsable.status, errorBody.parse(unparsable.json).code]).toEqual([400, 400]);
  });

  it('answers an unknown user with code 404 and an unlisted bonus with code 400, both as 400', async () => {
    const nobody = await gw.post('/bonus/credit/funds', { user_id: 'nobody', bonus_code: 'CASH10', amount: 5, currency: 'EUR' });
    expect([nobody.status, errorBody.parse(nobody.json).code]).toEqual([400, 404]);
    const unlisted = await gw.post('/bonus/credit', { user_id: 'u-1', bonus_code: 'NOPE', validity_amount: 3 });
    expect([unlisted.status, errorBody.parse(unlisted.json).code]).toEqual([400, 400]);
  });
});

describe('POST /reconciliation', () => {
  it('lists only the users for whom the key is true', async () => {
    const blocked = await gw.post('/reconciliation', { field: 'blocked' });
    expect(blocked.status).toBe(200);
    expect(crmReconciliation.parse(blocked.json).users).toEqual(['u-blocked']);
    const excluded = await gw.post('/reconciliation', { field: 'excluded', extra: true });
    expect(crmReconciliation.parse(excluded.json).users).toEqual([]);
  });

  it('maps each consent field to its consent type', async () => {
    await gw.adminPut('/admin/users/u-blocked/consents', { consents: [{ type: 'postMail', opted_in: true }] });
    const res = await gw.post('/reconciliation', { field: 'consent_post_mail' });
    expect(crmReconciliation.parse(res.json).users).toContain('u-blocked');
  });

  it('answers 501 for an unknown field and 400 for a missing one', async () => {
    const unknown = await gw.post('/reconciliation', { field: 'active' });
    expect(unknown.status).toBe(501);
    expect(errorBody.parse(unknown.json).error).toMatch(/active/);
    expect((await gw.post('/reconciliation', {})).status).toBe(400);
  });
});

describe('admin loading API', () => {
  it('refuses requests without the admin key, and with the CRM key', async () => {
    expect((await gw.put('/admin/users/x', sampleUser('x'))).status).toBe(401);
    expect((await gw.put('/admin/users/x', sampleUser('x'), { authorization: 'Bearer test-crm-key' })).status).toBe(401);
  });

  it('replaces a user on a second PUT and answers 200', async () => {
    const res = await gw.adminPut('/admin/users/u-blocked', sampleUser('u-blocked', { is_blocked: true, city: 'Mdina' }));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ user_id: 'u-blocked', created: false });
    expect((await gw.get('/userdetails/u-blocked')).json.city).toBe('Mdina');
  });

  it.each([
    ['a misspelt key', { birthdate: '1990-01-01' }, /birthdate: unknown key/],
    ['a bad birth date', { birth_date: '2/3/1992' }, /birth_date/],
    ['a timestamp with a one-digit hour', { registration_date: '2015-03-02T8:27:58Z' }, /registration_date/],
    ['a user_id other than the path', { user_id: 'other' }, /user_id/],
    ['a missing required field', { email: undefined }, /email: is required/],
    // The CRM's own rules (docs/operator-api.md): refused on loading, never served for the CRM to reject.
    ['a username of 2 characters', { username: 'ab' }, /username: must be 3 to 255 characters/],
    ['a sex outside the CRM list', { sex: 'M' }, /sex: must be one of male/],
    ['an e-mail that is not one', { email: 'tony-at-example' }, /email: must be an e-mail address/],
    ['an empty registration_date', { registration_date: '' }, /registration_date: must be an RFC 3339/],
    ['a registration_date that is only a date', { registration_date: '2015-03-02' }, /registration_date/],
    ['verified_at that is not a date-time', { verified_at: 'yes' }, /verified_at/],
    ['a segmentation custom_segment that is not a string', { segmentation: { custom_segment: 3 } }, /custom_segment: must be a string/],
  ])('refuses a user record with %s, naming the field', async (_label, change, message) => {
    const res = await gw.adminPut('/admin/users/u-bad', { ...sampleUser('u-bad'), ...change });
    expect(res.status).toBe(400);
    expect(adminErrorBody.parse(res.json).error).toMatch(message);
  });

  it('refuses consents for an unknown user and a bonus list with a value twice', async () => {
    expect((await gw.adminPut('/admin/users/nobody/consents', { consents: [] })).status).toBe(404);
    const twice = await gw.adminPut('/admin/bonuses', [
      { text: 'a', value: 'A' },
      { text: 'b', value: 'A' },
    ]);
    expect(twice.status).toBe(400);
    expect(twice.json.error).toMatch(/1\.value/);
  });
});

describe('UK product-level consents', () => {
  it('takes the one-object POST, serves products on GET and keeps the array shape working beside it', async () => {
    expect((await gw.adminPut('/admin/users/uk-1', sampleUser('uk-1'))).status).toBe(201);
    const post = await gw.post('/userconsents/uk-1', { consents: { channel: 'email', opted_in: true, products: ['casino', 'sportsbook'] } });
    expect(post.status).toBe(200);
    expect((await gw.post('/userconsents/uk-1', { consents: [{ type: 'sms', opted_in: true }] })).status).toBe(200);
    const { consents } = crmConsents.parse((await gw.get('/userconsents/uk-1')).json);
    expect(consents.find((c) => c.type === 'email')).toEqual({ opted_in: true, type: 'email', products: ['casino', 'sportsbook'] });
    expect(consents.find((c) => c.type === 'sms')).toEqual({ opted_in: true, type: 'sms' });
  });

  it('drops products when a channel is opted out, and names the field of a bad UK body', async () => {
    await gw.adminPut('/admin/users/uk-2', sampleUser('uk-2', { consents: [{ type: 'email', opted_in: true, products: ['lottery'] }] }));
    expect(crmConsents.parse((await gw.get('/userconsents/uk-2')).json).consents[0]).toEqual({ opted_in: true, type: 'email', products: ['lottery'] });
    expect((await gw.post('/userconsents/uk-2', { consents: { channel: 'email', opted_in: false, products: ['lottery'] } })).status).toBe(200);
    expect(crmConsents.parse((await gw.get('/userconsents/uk-2')).json).consents[0]).toEqual({ opted_in: false, type: 'email' });
    const bad = await gw.post('/userconsents/uk-2', { consents: { channel: 'fax', opted_in: true } });
    expect(bad.status).toBe(400);
    expect(errorBody.parse(bad.json).error).toMatch(/consents\.channel/);
    const badProducts = await gw.post('/userconsents/uk-2', { consents: { channel: 'sms', opted_in: true, products: 'casino' } });
    expect(errorBody.parse(badProducts.json).error).toMatch(/consents\.products/);
  });

  it('lists by product on POST /reconciliation/products: a channel without a split counts for every product', async () => {
    await gw.adminPut('/admin/users/rp-casino', sampleUser('rp-casino', { consents: [{ type: 'telephone', opted_in: true, products: ['casino'] }] }));
    await gw.adminPut('/admin/users/rp-all', sampleUser('rp-all', { consents: [{ type: 'telephone', opted_in: true }] }));
    await gw.adminPut('/admin/users/rp-sports', sampleUser('rp-sports', { consents: [{ type: 'telephone', opted_in: true, products: ['sports', 'a"b'] }] }));
    await gw.adminPut('/admin/users/rp-out', sampleUser('rp-out', { consents: [{ type: 'telephone', opted_in: false }] }));
    const casino = await gw.post('/reconciliation/products', { field: 'consent_telephone', product: 'casino' });
    expect(casino.status).toBe(200);
    const ours = (users: string[]) => users.filter((u) => u.startsWith('rp-')).sort();
    expect(ours(crmReconciliation.parse(casino.json).users)).toEqual(['rp-all', 'rp-casino']);
    const odd = await gw.post('/reconciliation/products', { field: 'consent_telephone', product: 'a"b' });
    expect(ours(crmReconciliation.parse(odd.json).users)).toEqual(['rp-all', 'rp-sports']);
    // The plain reconciliation lists every opted-in player, products or not.
    expect(ours(crmReconciliation.parse((await gw.post('/reconciliation', { field: 'consent_telephone' })).json).users)).toEqual([
      'rp-all',
      'rp-casino',
      'rp-sports',
    ]);
    expect((await gw.post('/reconciliation/products', { field: 'blocked', product: 'casino' })).status).toBe(501);
    expect((await gw.post('/reconciliation/products', { field: 'consent_telephone' })).status).toBe(400);
  });
});
