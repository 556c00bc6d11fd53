import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

describe('POST /channels/sms/single', () => {
  it('answers 200 with an sms_id for a deliverable message', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('single-ok'));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ sms_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('answers 401 without a key and with a wrong key', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('k1'), { 'x-api-key': '' })).status).toBe(401);
    const wrong = await gw.post('/channels/sms/single', smsMessage('k1'), { 'x-api-key': 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toMatch(/x-api-key/);
  });

  it('answers 400 naming the field when the provider rejects permanently', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('rejected', { recipient: '+447700900004' }));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/rejects/);
  });

  it('answers 503 for a transient provider error, so the CRM retries', async () => {
    const res = await gw.post('/channels/sms/single', smsMessage('transient', { recipient: '+447700900005' }));
    expect(res.status).toBe(503);
    expect(res.json.error).toMatch(/temporary/);
  });

  it('returns the same sms_id for a retry of a sent id', async () => {
    const first = await gw.post('/channels/sms/single', smsMessage('retry-me'));
    const second = await gw.post('/channels/sms/single', smsMessage('retry-me'));
    expect(second.status).toBe(200);
    expect(second.json.sms_id).toBe(first.json.sms_id);
  });
});
