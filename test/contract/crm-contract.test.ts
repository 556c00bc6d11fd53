/**
 * The contract suite: every answer of the operator API, success and error, on the sql backend (SQLite, or
 * PostgreSQL with TEST_DATABASE_URL) and on the http backend, checked with ajv against JSON Schemas (draft-07)
 * made from src/crm/contract.ts, the schemas the OpenAPI document shows. The first block holds those
 * schemas to the rules of docs/operator-api.md "The CRM's schemas", so a loosened schema fails here before it
 * can let a bad answer through.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crmBonusListSchema, crmErrorSchema, crmUserBlocksSchema, crmUserConsentsSchema, crmUserDetailsSchema } from '../../src/crm/contract.js';
import { startFakeOperatorPlatform, type FakeOperatorPlatform } from '../fakes/operator-platform.js';
import { sampleUser } from '../helpers/crm-schemas.js';
import { startTestGateway, TEST_API_KEY, type TestGateway } from '../helpers/gateway.js';

// ajv-formats is CommonJS: imported from ESM its default may be the module object, whose own default is the plugin.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv) => Ajv;
const ajv = new Ajv({ allErrors: true, strict: true });
addFormats(ajv);
const draft7 = (schema: z.ZodType) => z.toJSONSchema(schema, { target: 'draft-7', io: 'output' }) as Record<string, any>;
const jsonSchemas = {
  userdetails: draft7(crmUserDetailsSchema),
  userblocks: draft7(crmUserBlocksSchema),
  userconsents: draft7(crmUserConsentsSchema),
  bonuslist: draft7(crmBonusListSchema),
  error: draft7(crmErrorSchema),
};
type SchemaName = keyof typeof jsonSchemas;
const validators = Object.fromEntries(Object.entries(jsonSchemas).map(([name, schema]) => [name, ajv.compile(schema)])) as Record<SchemaName, ValidateFunction>;

function problems(name: SchemaName, value: unknown): string[] {
  const validate = validators[name];
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

describe('the JSON Schemas hold the CRM’s rules', () => {
  const details = jsonSchemas.userdetails;
  const sixteen = [
    'first_name',
    'last_name',
    'title',
    'address',
    'city',
    'postal_code',
    'country',
    'language',
    'market',
    'mobile',
    'mobile_prefix',
    'affiliate_reference',
    'registration_code',
  ];

  it('user details: the required keys, no other keys, and deleted_at and segmentation optional', () => {
    expect(details.additionalProperties).toBe(false);
    const required = [
      'user_id',
      'username',
      ...sixteen,
      'currency',
      'origin',
      'email',
      'birth_date',
      'registration_date',
      'verified_at',
      'sex',
      'roles',
      'is_blocked',
      'is_excluded',
    ];
    expect([...details.required].sort()).toEqual(required.sort());
    expect(Object.keys(details.properties).sort()).toEqual([...required, 'deleted_at', 'segmentation'].sort());
  });

  it.each([
    ['a complete record', {}, true],
    ['verified_at ""', { verified_at: '' }, true],
    ['a deleted player', { deleted_at: '2020-01-01T00:00:00Z' }, true],
    ['segmentation with custom_segment', { segmentation: { custom_segment: 'vip', level: 3 } }, true],
    ['sex "" and e-mail ""', { sex: '', email: '', birth_date: '' }, true],
    ['no verified_at', { verified_at: undefined }, false],
    ['verified_at null', { verified_at: null }, false],
    ['deleted_at null', { deleted_at: null }, false],
    ['a username of 2 characters', { username: 'ab' }, false],
    ['a username of 256 characters', { username: 'u'.repeat(256) }, false],
    ['sex "M"', { sex: 'M' }, false],
    ['an e-mail that is not one', { email: 'tony-at-example' }, false],
    ['a birth date that is not YYYY-MM-DD', { birth_date: '02/03/1992' }, false],
    ['an empty registration_date', { registration_date: '' }, false],
    ['a registration_date without time', { registration_date: '2015-03-02' }, false],
    ['a key outside the list', { nickname: 'tony' }, false],
    ['custom_segment that is not a string', { segmentation: { custom_segment: 1 } }, false],
    ['is_blocked as a string', { is_blocked: 'false' }, false],
    ['an empty user_id', { user_id: '' }, false],
  ])('user details with %s: valid %s', (_label, change, valid) => {
    const record = JSON.parse(JSON.stringify({ ...sampleUser('u-1'), ...change }));
    expect(problems('userdetails', record).length === 0).toBe(valid);
  });

  it.each([
    ['userblocks', { blocks: [{ active: true, type: 'Blocked', note: '' }] }, true],
    ['userblocks', { blocks: [{ active: true, type: 'Blocked', note: '', since: 'x' }] }, false],
    ['userblocks', { blocks: [], total: 0 }, false],
    ['userconsents', { consents: [{ opted_in: true, type: 'sms', products: ['casino'] }] }, true],
    ['userconsents', { consents: [{ opted_in: true, type: 'fax' }] }, false],
    ['userconsents', { consents: [], user_id: 'u' }, false],
    ['bonuslist', { Data: [{ text: 'a', value: 'A' }], Success: true, Errors: [] }, true],
    ['bonuslist', { Data: [{ text: 'a', value: 'A', id: 1 }], Success: true, Errors: [] }, false],
    ['bonuslist', { Data: [], Success: false, Errors: [{ code: 1 }] }, false],
    ['bonuslist', { Data: [], Success: false, Errors: [], error: 'x' }, false],
    ['error', { error: 'x', code: 400 }, true],
    ['error', { error: 'x' }, false],
    ['error', { error: 'x', code: 400.5 }, false],
    ['error', { error: 'x', code: 400, detail: 'y' }, false],
  ] as const)('%s %j: valid %s', (name, value, valid) => {
    expect(problems(name, value).length === 0).toBe(valid);
  });
});

interface Exchange {
  label: string;
  status: number;
  body: unknown;
}

async function exchange(
  gw: TestGateway,
  label: string,
  path: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Exchange> {
  const res = await fetch(gw.url + path, {
    method: init.method ?? 'GET',
    headers: { 'x-api-key': TEST_API_KEY, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body,
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { label, status: res.status, body };
}

/** Which schema an answer of this path must pass; errors always pass the error schema. */
function schemaOf(method: string, path: string, status: number): SchemaName | 'reconciliation' | 'write' {
  if (status >= 400) return 'error';
  if (path.startsWith('/userdetails/')) return 'userdetails';
  if (path.startsWith('/userblocks/')) return 'userblocks';
  if (path.startsWith('/userconsents/') && method === 'GET') return 'userconsents';
  if (path.startsWith('/bonus/list')) return 'bonuslist';
  if (path.startsWith('/reconciliation')) return 'reconciliation';
  return 'write';
}

/** The calls the CRM makes, and the ways each can fail, against one gateway. */
async function exerciseOperatorApi(gw: TestGateway, ids: { known: string[] }): Promise<Array<Exchange & { path: string; method: string }>> {
  const out: Array<Exchange & { path: string; method: string }> = [];
  const run = async (label: string, path: string, init: Parameters<typeof exchange>[3] = {}) =>
    out.push({ ...(await exchange(gw, label, path, init)), path, method: init.method ?? 'GET' });
  const post = (body: unknown) => ({ method: 'POST', body: JSON.stringify(body) });
  for (const id of ids.known) {
    await run(`details of ${id}`, `/userdetails/${id}`);
    await run(`blocks of ${id}`, `/userblocks/${id}`);
    await run(`consents of ${id}`, `/userconsents/${id}`);
  }
  for (const area of ['userdetails', 'userblocks', 'userconsents']) {
    await run(`${area} of an unknown user`, `/${area}/nobody`);
    await run(`${area} without credentials`, `/${area}/${ids.known[0]}`, { headers: { 'x-api-key': '' } });
    await run(`${area} with a wrong method`, `/${area}/${ids.known[0]}`, { method: 'DELETE' });
  }
  await run('bonus list', '/bonus/list');
  await run('an unknown bonus path', '/bonus/nothing');
  await run('consent change', `/userconsents/${ids.known[0]}`, post({ consents: [{ opted_in: false, type: 'email' }], added_by_crm: 1 }));
  await run('consent change with a bad type', `/userconsents/${ids.known[0]}`, post({ consents: [{ opted_in: false, type: 'fax' }] }));
  await run('consent change not JSON', `/userconsents/${ids.known[0]}`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } });
  await run('credit', '/bonus/credit', post({ user_id: ids.known[0], bonus_code: 'FS', validity_amount: 3 }));
  await run('credit of an unknown user', '/bonus/credit', post({ user_id: 'nobody', bonus_code: 'FS' }));
  await run('credit without bonus_code', '/bonus/credit', post({ user_id: ids.known[0] }));
  await run('credit not JSON', '/bonus/credit', { method: 'POST', body: '{', headers: { 'content-type': 'text/plain' } });
  await run('credit too large', '/bonus/credit', post({ user_id: ids.known[0], bonus_code: 'FS', pad: 'x'.repeat(70_000) }));
  await run('funds', '/bonus/credit/funds', post({ user_id: ids.known[0], bonus_code: 'FS', amount: 5, currency: 'EUR' }));
  await run('funds with a bad amount', '/bonus/credit/funds', post({ user_id: ids.known[0], bonus_code: 'FS', amount: 'five', currency: 'EUR' }));
  await run('funds without credentials', '/bonus/credit/funds', { ...post({}), headers: { 'x-api-key': 'wrong' } });
  await run('reconciliation', '/reconciliation', post({ field: 'consent_sms' }));
  await run('reconciliation of an unknown field', '/reconciliation', post({ field: 'vip' }));
  await run('UK consent change', `/userconsents/${ids.known[0]}`, post({ consents: { channel: 'sms', opted_in: true, products: ['casino'] } }));
  await run('consents after a UK change', `/userconsents/${ids.known[0]}`);
  await run('reconciliation by product', '/reconciliation/products', post({ field: 'consent_sms', product: 'casino' }));
  await run('reconciliation by product without product', '/reconciliation/products', post({ field: 'consent_sms' }));
  await run('reconciliation without field', '/reconciliation', post({}));
  return out;
}

function expectAllPass(exchanges: Array<Exchange & { path: string; method: string }>) {
  const failures: string[] = [];
  for (const x of exchanges) {
    const name = schemaOf(x.method, x.path, x.status);
    if (name === 'reconciliation') {
      const body = x.body as Record<string, unknown>;
      const ok = typeof body.error === 'string' ? Number.isInteger(body.code) : Array.isArray(body.users) && typeof body.timestamp === 'string';
      if (!ok) failures.push(`${x.label}: ${JSON.stringify(x.body)}`);
      continue;
    }
    if (name === 'write') continue;
    const found = problems(name, x.body);
    if (found.length > 0) failures.push(`${x.label} (${x.status}, ${name}): ${found.join('; ')} in ${JSON.stringify(x.body).slice(0, 300)}`);
    if (name === 'error' && (x.body as { code?: number }).code === undefined) failures.push(`${x.label}: no code`);
  }
  expect(failures).toEqual([]);
}

const users = [
  sampleUser('c-full', { verified_at: '2016-01-01T10:00:00+01:00', segmentation: { custom_segment: 'vip', level: 3 } }),
  sampleUser('c-bare', { verified_at: undefined, first_name: '', title: '', sex: '', email: '', birth_date: '' }),
  sampleUser('c-null', { verified_at: null, deleted_at: null, segmentation: null }),
  sampleUser('c-gone', { deleted_at: '2021-02-03T04:05:06Z', is_blocked: true, block_note: 'closed' }),
];
const ids = { known: users.map((u) => u.user_id) };

describe('sql backend: every answer passes the CRM’s schemas', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ server: { body_limit_bytes: 65_536 } });
    for (const u of users) expect((await gw.adminPut(`/admin/users/${u.user_id}`, u)).status).toBe(201);
    expect((await gw.adminPut('/admin/bonuses', [{ text: 'FS: Free spins', value: 'FS' }])).status).toBe(200);
  });
  afterAll(async () => gw.close());

  it('for every player, call and error', async () => {
    const exchanges = await exerciseOperatorApi(gw, ids);
    expectAllPass(exchanges);
    // The cases above reach the answers they are meant to.
    const statusOf = (label: string) => exchanges.find((x) => x.label === label)!.status;
    expect([
      statusOf('details of c-bare'),
      statusOf('userdetails of an unknown user'),
      statusOf('userdetails without credentials'),
      statusOf('userdetails with a wrong method'),
    ]).toEqual([200, 404, 401, 405]);
    expect([
      statusOf('credit'),
      statusOf('credit of an unknown user'),
      statusOf('credit not JSON'),
      statusOf('credit too large'),
      statusOf('funds without credentials'),
    ]).toEqual([200, 400, 400, 400, 401]);
    expect([statusOf('reconciliation'), statusOf('reconciliation of an unknown field'), statusOf('bonus list'), statusOf('an unknown bonus path')]).toEqual([
      200, 501, 200, 404,
    ]);
    const details = (id: string) => exchanges.find((x) => x.label === `details of ${id}`)!.body as Record<string, unknown>;
    expect([details('c-bare').verified_at, details('c-null').verified_at]).toEqual(['', '']);
    // deleted_at is off by default (operator.send_deleted_at): the maker's schema allows no key outside its list.
    expect(['c-full', 'c-bare', 'c-null', 'c-gone'].map((id) => 'deleted_at' in details(id))).toEqual([false, false, false, false]);
    expect((exchanges.find((x) => x.label === 'consents after a UK change')!.body as { consents: unknown[] }).consents).toContainEqual({
      opted_in: true,
      type: 'sms',
      products: ['casino'],
    });
    expect([statusOf('reconciliation by product'), statusOf('reconciliation by product without product')]).toEqual([200, 400]);
  });

  it('answers 429 in the CRM’s error shape once an address failed too often', async () => {
    const limited = await startTestGateway({ auth: { failure_budget: 2 } });
    try {
      const answers: Exchange[] = [];
      for (let i = 0; i < 4; i++) answers.push(await exchange(limited, 'bad key', '/userdetails/u', { headers: { 'x-api-key': 'wrong' } }));
      expect(answers.map((a) => a.status)).toContain(429);
      for (const a of answers) expect(problems('error', a.body)).toEqual([]);
    } finally {
      await limited.close();
    }
  });
});

describe('http backend: every answer passes the CRM’s schemas', () => {
  let platform: FakeOperatorPlatform;
  let gw: TestGateway;
  beforeAll(async () => {
    platform = await startFakeOperatorPlatform();
    for (const u of users) platform.users.set(u.user_id, JSON.parse(JSON.stringify({ ...u, block_note: undefined, platform_only_key: 'x' })));
    platform.consents.set('c-full', [
      { type: 'email', opted_in: true },
      { type: 'sms', opted_in: true },
      { type: 'telephone', opted_in: false },
      { type: 'postMail', opted_in: false },
      { type: 'siteNotification', opted_in: true },
      { type: 'pushNotification', opted_in: false },
    ]);
    for (const id of ids.known.slice(1)) platform.consents.set(id, platform.consents.get('c-full')!);
    gw = await startTestGateway({ server: { body_limit_bytes: 65_536 }, operator: { backend: 'http', base_url: platform.url, timeout: '500ms' } });
  });
  afterAll(async () => {
    await gw.close();
    await platform.close();
  });

  it('for every player, call and error, the platform’s faults included', async () => {
    platform.reconciliation = { users: ['c-full', 'c-bare'] };
    const exchanges = await exerciseOperatorApi(gw, ids);
    platform.script('/userdetails/c-full', { status: 500, body: 'down' });
    exchanges.push({ ...(await exchange(gw, 'platform error', '/userdetails/c-full')), path: '/userdetails/c-full', method: 'GET' });
    platform.script('/userdetails/c-full', { body: { ...sampleUser('c-full'), sex: 'M' } });
    exchanges.push({ ...(await exchange(gw, 'platform record the CRM would refuse', '/userdetails/c-full')), path: '/userdetails/c-full', method: 'GET' });
    platform.script('/bonus/list', { delayMs: 800, body: { Data: [], Success: true, Errors: [] } });
    exchanges.push({ ...(await exchange(gw, 'platform too slow', '/bonus/list')), path: '/bonus/list', method: 'GET' });
    platform.script('/bonus/credit', { status: 503, body: { error: 'wallet down' } });
    exchanges.push({
      ...(await exchange(gw, 'credit while the platform fails', '/bonus/credit', {
        method: 'POST',
        body: JSON.stringify({ user_id: 'c-full', bonus_code: 'X1' }),
      })),
      path: '/bonus/credit',
      method: 'POST',
    });
    platform.script('/reconciliation', { body: { error: 'replica lagging' } });
    exchanges.push({
      ...(await exchange(gw, 'platform reconciliation error', '/reconciliation', { method: 'POST', body: JSON.stringify({ field: 'blocked' }) })),
      path: '/reconciliation',
      method: 'POST',
    });
    expectAllPass(exchanges);
    const find = (label: string) => exchanges.find((x) => x.label === label)!;
    expect([find('platform error').status, find('platform record the CRM would refuse').status, find('platform too slow').status]).toEqual([502, 502, 504]);
    expect((find('platform record the CRM would refuse').body as { error: string }).error).toMatch(/sex/);
    expect([find('credit while the platform fails').status, (find('credit while the platform fails').body as { code: number }).code]).toEqual([500, 502]);
    expect(find('platform reconciliation error')).toMatchObject({ status: 200, body: { error: 'operator platform: replica lagging', code: 1002 } });
    expect((find('details of c-bare').body as Record<string, unknown>).verified_at).toBe('');
  });
});
