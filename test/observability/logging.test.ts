import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, maskPhoneNumbersIn } from '../../src/observability/logger.js';
import { FakeCrm } from '../fakes/crm.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

type Line = Record<string, unknown> & { msg: string };

const crm = new FakeCrm();
let gw: TestGateway | undefined;
let lines: Line[] = [];
let raw: string[] = [];

/** The gateway's real logger (createLogger, debug level) writing into arrays instead of stdout. */
function capturingLogger() {
  lines = [];
  raw = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n').filter(Boolean)) {
        raw.push(text);
        lines.push(JSON.parse(text) as Line);
      }
      done();
    },
  });
  return createLogger('debug', sink);
}

async function gatewayLogging() {
  gw = await startTestGateway(
    { crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' }, delivery: { poll_interval: '20ms' } },
    { logger: capturingLogger() },
  );
  return gw;
}

const grep = (id: string) => lines.filter((l) => JSON.stringify(l).includes(id));

beforeAll(async () => {
  await crm.start();
});
afterAll(async () => crm.stop());
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  crm.reset();
});

describe('log lines about a message', () => {
  it('tell the whole send → receipt → conversion story under one sms_id, without the number or the text', async () => {
    const gateway = await gatewayLogging();
    const content = 'Claim your 50 free spins before midnight';
    const sent = await gateway.post('/channels/sms/single', smsMessage('story-1', { content, recipient: '+447700900123' }), { 'x-request-id': 'crm-req-42' });
    expect(sent.status).toBe(200);
    expect(sent.headers.get('x-request-id')).toBe('crm-req-42');
    const smsId = sent.json.sms_id as string;
    await waitFor(() => grep(smsId).some((l) => l.msg === 'conversion posted'), 10_000, 'the conversion log line');

    const story = grep(smsId);
    // The receipt may be applied before the send's line is written (it can overtake the recording of the answer).
    expect(story.map((l) => l.msg).sort()).toEqual(['conversion posted', 'receipt applied', 'sms dispatched']);
    for (const line of story) expect(line).toMatchObject({ sms_id: smsId, activity_id: 'story-1' });
    const line = (msg: string) => story.find((l) => l.msg === msg)!;
    expect(line('sms dispatched')).toMatchObject({ request_id: 'crm-req-42', provider: 'sandbox', to: '+44********23', state: 'submitted' });
    // The receipt came in its own request (the sandbox's post to /dlr), which has its own id.
    expect(line('receipt applied')).toMatchObject({ status: 'delivered', reported: 'delivered', request_id: expect.any(String) });
    expect(line('receipt applied').request_id).not.toBe('crm-req-42');
    expect(line('conversion posted')).toMatchObject({ delivery_status: 'delivered' });

    const everything = raw.join('\n');
    expect(everything).not.toContain('447700900123');
    expect(everything).not.toContain(content);
  });

  it('logs a refusal at info with the number masked, also inside the provider’s error text', async () => {
    const gateway = await gatewayLogging();
    const refused = await gateway.post('/channels/sms/single', smsMessage('story-refused', { recipient: '+447700900004' }));
    expect(refused.status).toBe(400);
    const [line] = grep('story-refused');
    expect(line).toMatchObject({ level: 30, msg: 'sms dispatched', state: 'rejected', to: '+44********04', request_id: expect.any(String) });
    expect(raw.join('\n')).not.toContain('447700900004');
  });
});

describe('request ids', () => {
  it('generates one when the caller sends none or an unusable one, and returns it', async () => {
    const gateway = await gatewayLogging();
    const none = await gateway.get('/healthz');
    expect(none.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const forged = await gateway.get('/healthz', { 'x-request-id': 'a"b {"level":60}' });
    expect(forged.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const notFound = await gateway.get('/no-such-thing', { 'x-request-id': 'trace-7' });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-request-id')).toBe('trace-7');
  });

  it('is on answers that are not built from JSON: a refusal, the metrics text and the console page', async () => {
    const gateway = await gatewayLogging();
    const answers = await Promise.all([
      gateway.post('/channels/sms/single', {}, { 'x-api-key': 'wrong', 'x-request-id': 'trace-401' }),
      fetch(`${gateway.url}/metrics`, { headers: { authorization: `Bearer ${gateway.config.admin.api_key}`, 'x-request-id': 'trace-metrics' } }),
      fetch(`${gateway.url}/console`, { headers: { 'x-request-id': 'trace-console' } }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([401, 200, 200]);
    expect(answers.map((a) => a.headers.get('x-request-id'))).toEqual(['trace-401', 'trace-metrics', 'trace-console']);
  });
});

describe('maskPhoneNumbersIn', () => {
  it.each([
    ['a Twilio-style error quoting the number', "The 'To' number +447700900123 is not valid", "The 'To' number +44********23 is not valid"],
    ['digits written with spaces', 'cannot reach 0044 7700 900123', 'cannot reach 004*********23'],
    ['short codes and error codes stay', 'error 21610 for short code 80080', 'error 21610 for short code 80080'],
  ])('masks %s', (_label, text, expected) => {
    expect(maskPhoneNumbersIn(text)).toBe(expected);
  });
});
