/**
 * A CRM webhook that answers 4xx to one conversion (docs/security.md): the worker splits the refused post so
 * only that conversion backs off and dead-letters, and every other conversion of the post is delivered once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isRowRefusal } from '../../src/delivery/webhook.js';
import { FakeCrm } from '../fakes/crm.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
let gw: TestGateway | undefined;
beforeAll(async () => {
  await crm.start();
});
afterAll(async () => crm.stop());
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  crm.reset();
});

describe('which refused posts are split', () => {
  it.each([
    [400, true],
    [404, true],
    [409, true],
    [413, true],
    [422, true],
    [401, false],
    [403, false],
    [407, false],
    [408, false],
    [425, false],
    [429, false],
    [500, false],
    [503, false],
    [null, false],
  ])('status %s: split %s', (status, split) => expect(isRowRefusal(status)).toBe(split));
});

describe('a conversion the CRM refuses', () => {
  it('alone backs off and dead-letters; the others of its post are posted once', async () => {
    gw = await startTestGateway({
      crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' },
      delivery: { poll_interval: '20ms', retry_initial_ms: 20, retry_max_ms: 50, max_attempts: 3 },
    });
    crm.refuseActivity('conv-poison');
    const ids = Array.from({ length: 20 }, (_, i) => `conv-good-${i}`);
    const batch = await gw.post(
      '/channels/sms/batch',
      [...ids.slice(0, 7), 'conv-poison', ...ids.slice(7)].map((id) => smsMessage(id)),
    );
    expect(batch.json.successful).toHaveLength(21);
    const poisonSmsId = batch.json.successful.find((e: { id: string }) => e.id === 'conv-poison').sms_id as string;
    const story = async () => (await gw!.get(`/admin/messages/${poisonSmsId}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` })).json;
    await waitFor(async () => (await story()).conversions?.[0]?.dead === 1, 10_000, 'the refused conversion dead-lettered');
    const conversion = (await story()).conversions[0];
    expect(conversion.attempts).toBe(3);
    expect(conversion.posted_at).toBeNull();
    // Every other conversion reached the CRM exactly once; the refused one never did.
    const posted = crm.conversions.map((c) => String(c.activity.id)).sort();
    expect(posted).toEqual([...ids].sort());
    // The refused posts held other conversions too at first (the receipts came together), and were split.
    expect(crm.refused.some((post) => post.length > 1)).toBe(true);
    expect(crm.refused.filter((post) => post.length === 1)).toHaveLength(3);
  });
});
