/**
 * Credits of the sql backend reach the operator: committed and answered 200 first, then pushed to a real HTTP
 * receiver at operator.credits.url with Idempotency-Key = credit_id, retried, dead-lettered and replayed.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleUser } from '../../helpers/crm-schemas.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../../helpers/gateway.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: any;
}

let receiver: Server;
const received: Received[] = [];
/** Statuses to answer, in order; 200 once they run out. */
const answers: number[] = [];
let gw: TestGateway;

beforeAll(async () => {
  receiver = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    received.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
    res.writeHead(answers.shift() ?? 200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const { port } = receiver.address() as AddressInfo;
  gw = await startTestGateway({
    operator: {
      credits: {
        url: `http://127.0.0.1:${port}/wallet/credits`,
        headers: { 'x-wallet-key': 'w1' },
        poll_interval: '50ms',
        retry_initial_ms: 50,
        retry_max_ms: 100,
        max_attempts: 3,
      },
    },
  });
  expect((await gw.adminPut('/admin/users/w-1', sampleUser('w-1'))).status).toBe(201);
  expect((await gw.adminPut('/admin/bonuses', [{ text: 'CASH', value: 'CASH10' }])).status).toBe(200);
});
afterAll(async () => {
  await gw.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const credits = async () => {
  const res = await fetch(`${gw.url}/admin/credits?user_id=w-1`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
  return ((await res.json()) as { credits: Array<{ credit_id: string; delivery: string; delivery_attempts: number }> }).credits;
};

describe('credits pushed to operator.credits.url (sql backend)', () => {
  it('pushes a committed credit with its references and Idempotency-Key = credit_id, retrying until taken', async () => {
    answers.push(500);
    const res = await gw.post(
      '/bonus/credit/funds',
      { user_id: 'w-1', bonus_code: 'CASH10', amount: 5, currency: 'EUR', validity_amount: 7 },
      { 'X-Crm-Activityid': '31', 'X-Crm-Actionid': '32', 'X-Crm-Triggerhash': 'th-w' },
    );
    expect(res.status).toBe(200);
    const creditId = res.json.credit_id as string;
    await waitFor(async () => (await credits()).find((c) => c.credit_id === creditId)?.delivery === 'delivered', 10_000, 'the credit delivered');
    const pushes = received.filter((r) => r.body.credit_id === creditId);
    expect(pushes).toHaveLength(2);
    // delivery_attempts counts the pushes made, the one taken included (docs/operator-api.md).
    expect((await credits()).find((c) => c.credit_id === creditId)?.delivery_attempts).toBe(2);
    expect(pushes.map((p) => p.headers['idempotency-key'])).toEqual([creditId, creditId]);
    expect(pushes[1]!.headers['x-wallet-key']).toBe('w1');
    expect(pushes[1]!.body).toMatchObject({
      kind: 'funds',
      user_id: 'w-1',
      bonus_code: 'CASH10',
      amount: 5,
      currency: 'EUR',
      crm_references: { activity_id: 31, action_id: 32, trigger_hash: 'th-w' },
      request: { validity_amount: 7 },
    });
  });

  it('dead-letters a credit after max_attempts and pushes it again on replay', async () => {
    answers.push(503, 503, 503);
    const res = await gw.post('/bonus/credit', { user_id: 'w-1', bonus_code: 'CASH10' });
    const creditId = res.json.credit_id as string;
    await waitFor(async () => (await credits()).find((c) => c.credit_id === creditId)?.delivery === 'dead', 10_000, 'the credit dead');
    expect(received.filter((r) => r.body.credit_id === creditId)).toHaveLength(3);
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text();
    expect(metrics).toMatch(/sms_gateway_operator_credits_outbox\{state="dead"\} 1/);

    const replay = await fetch(`${gw.url}/admin/credits/replay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ credit_ids: [creditId] }),
    });
    expect(await replay.json()).toEqual({ replayed: 1 });
    await waitFor(async () => (await credits()).find((c) => c.credit_id === creditId)?.delivery === 'delivered', 10_000, 'the replayed credit delivered');
    expect(received.filter((r) => r.body.credit_id === creditId)).toHaveLength(4);
  });

  it('does not push a repeat of a credited action again', async () => {
    const headers = { 'X-Crm-Activityid': '41', 'X-Crm-Actionid': '42', 'X-Crm-Triggerhash': 'th-once' };
    const first = await gw.post('/bonus/credit', { user_id: 'w-1', bonus_code: 'CASH10' }, headers);
    await waitFor(async () => (await credits()).find((c) => c.credit_id === first.json.credit_id)?.delivery === 'delivered', 10_000, 'delivered');
    const repeat = await gw.post('/bonus/credit', { user_id: 'w-1', bonus_code: 'CASH10' }, headers);
    expect(repeat.json.credit_id).toBe(first.json.credit_id);
    const later = await gw.post('/bonus/credit', { user_id: 'w-1', bonus_code: 'CASH10' });
    await waitFor(async () => (await credits()).find((c) => c.credit_id === later.json.credit_id)?.delivery === 'delivered', 10_000, 'the next delivered');
    expect(received.filter((r) => r.body.credit_id === first.json.credit_id)).toHaveLength(1);
    expect((await credits()).find((c) => c.credit_id === first.json.credit_id)?.delivery_attempts).toBe(1);
  });
});
