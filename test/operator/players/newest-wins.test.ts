/**
 * Opt-outs hold against the operator's data (docs/consents.md): a player's own sms opt-out (a STOP by SMS, here from
 * the Twilio fake) is not undone by an operator load whose consents are older, or do not say when they were set;
 * a record whose consents_updated_at is newer wins, which is how an operator re-opts a player in deliberately.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { importUsers } from '../../../src/commands/import-users.js';
import { smsOptOutHolds } from '../../../src/operator/players/sms-opt-out-holds.js';
import { startTwilioFake, type TwilioFake } from '../../fakes/twilio.js';
import { sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const OUR_NUMBER = '+447700900999';
let gw: TestGateway;
let twilio: TwilioFake;
/** When the player texted STOP in the current test. */
let stoppedAt: number;

beforeAll(async () => {
  twilio = await startTwilioFake();
  gw = await startTestGateway({
    providers: { tw: { type: 'twilio', base_url: twilio.url, account_sid: twilio.accountSid, auth_token: twilio.authToken, from: OUR_NUMBER } },
  });
});
afterAll(async () => {
  await gw.close();
  await twilio.close();
});

const player = (consents: Array<{ type: string; opted_in: boolean }>, asOf?: number) =>
  sampleUser('p1', {
    mobile_prefix: '+44',
    mobile: '7700900111',
    consents,
    ...(asOf !== undefined ? { consents_updated_at: new Date(asOf).toISOString() } : {}),
  });
const smsConsent = async () => (await gw.get('/userconsents/p1')).json.consents.find((c: { type: string }) => c.type === 'sms').opted_in as boolean;
const emailConsent = async () => (await gw.get('/userconsents/p1')).json.consents.find((c: { type: string }) => c.type === 'email').opted_in as boolean;

beforeEach(async () => {
  expect((await gw.adminPut('/admin/users/p1', player([{ type: 'sms', opted_in: true }], Date.now()))).status).toBeLessThan(300);
  expect(await smsConsent()).toBe(true);
  stoppedAt = Date.now();
  expect((await twilio.postInbound(`${gw.url}/mo/tw`, { from: '+447700900111', to: OUR_NUMBER, body: 'STOP' })).status).toBe(200);
  expect(await smsConsent()).toBe(false);
});

describe('smsOptOutHolds', () => {
  it.each([
    ['a record that does not say when its consents were set', undefined, true],
    ['a record older than the opt-out', 999, true],
    ['a record as recent as the opt-out', 1_000, false],
    ['a record newer than the opt-out', 1_001, false],
  ])('against %s (consents_updated_at %s) the opt-out holds: %s', (_label, asOf, holds) => {
    expect(smsOptOutHolds(1_000, asOf)).toBe(holds);
  });
});

describe('PUT /admin/users/:id/consents', () => {
  it('keeps the SMS opt-out against an opt-in without consents_updated_at, and applies the other types', async () => {
    const res = await gw.adminPut('/admin/users/p1/consents', {
      consents: [
        { type: 'sms', opted_in: true },
        { type: 'email', opted_in: true },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.consents.find((c: { type: string }) => c.type === 'sms').opted_in).toBe(false);
    expect(await emailConsent()).toBe(true);
  });

  it('keeps it against an opt-in older than the STOP', async () => {
    await gw.adminPut('/admin/users/p1/consents', {
      consents: [{ type: 'sms', opted_in: true }],
      consents_updated_at: new Date(stoppedAt - 60_000).toISOString(),
    });
    expect(await smsConsent()).toBe(false);
    // Still the player's own opt-out: the next old record cannot undo it either.
    await gw.adminPut('/admin/users/p1/consents', { consents: [{ type: 'sms', opted_in: true }], consents_updated_at: new Date(stoppedAt - 1).toISOString() });
    expect(await smsConsent()).toBe(false);
  });

  it('applies an opt-in newer than the STOP (the deliberate override)', async () => {
    await gw.adminPut('/admin/users/p1/consents', {
      consents: [{ type: 'sms', opted_in: true }],
      consents_updated_at: new Date(Date.now() + 1_000).toISOString(),
    });
    expect(await smsConsent()).toBe(true);
  });

  it('names a consents_updated_at that is not a timestamp', async () => {
    const res = await gw.adminPut('/admin/users/p1/consents', { consents: [{ type: 'sms', opted_in: true }], consents_updated_at: 'yesterday' });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/^consents_updated_at: must be an RFC 3339 timestamp/);
  });
});

describe('PUT /admin/users/:id and import users', () => {
  it('keeps the SMS opt-out when the whole record is loaded again without a timestamp, and tells the CRM nothing', async () => {
    const events = () =>
      gw.gateway.ledger.db.selectFrom('crm_events').select('id').where('user_id', '=', 'p1').where('type', '=', 'USER_CONSENTS_V2').execute();
    const before = (await events()).length;
    expect((await gw.adminPut('/admin/users/p1', player([{ type: 'sms', opted_in: true }]))).status).toBe(200);
    expect(await smsConsent()).toBe(false);
    expect((await events()).length).toBe(before);
    // Still held as the player's own: a later old record cannot undo it either.
    const row = await gw.gateway.ledger.db
      .selectFrom('operator_consents')
      .selectAll()
      .where('user_id', '=', 'p1')
      .where('type', '=', 'sms')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ opted_in: 0, source: 'sms' });
  });

  it('keeps it through an import of older data and applies a newer line', async () => {
    const older = JSON.stringify(player([{ type: 'sms', opted_in: true }], stoppedAt - 3_600_000));
    const errors: string[] = [];
    const run = (text: string) =>
      importUsers(gw.gateway.ledger.db, Readable.from([text + '\n']), { now: Date.now, onBadLine: (_line, error) => errors.push(error) });
    expect((await run(older)).loaded).toBe(1);
    expect(await smsConsent()).toBe(false);
    expect((await run(JSON.stringify(player([{ type: 'sms', opted_in: true }], Date.now() + 1_000)))).loaded).toBe(1);
    expect(await smsConsent()).toBe(true);
    expect(errors).toEqual([]);
  });
});
