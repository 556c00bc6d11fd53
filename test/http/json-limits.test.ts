/**
 * Depth and size limits at parse time (docs/security.md): a body nested deeper than server.max_json_depth is
 * refused by name before anything walks it, a batch keeps its other entries, receipt requests are bounded, and
 * receipts set aside are deleted after delivery.parked_receipt_retention.
 */
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { describePath, findTooDeep, withoutTooDeep } from '../../src/http/json-depth.js';
import { boundReceiptEvents } from '../../src/delivery/receipt-limits.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
/** A message whose activity holds `depth` nested arrays under `meta`: the message is 2 + depth levels deep. */
const deepMessage = (id: string, depth: number) => JSON.stringify(smsMessage(id)).replace('"activity":{', `"activity":{"meta":${nested(depth)},`);

describe('finding JSON nested too deep, without recursion', () => {
  it.each([
    ['a flat object', '{"a":1}', 2, []],
    ['exactly at the limit', '{"a":{"b":1}}', 2, []],
    ['one level over', '{"a":{"b":{"c":1}}}', 2, [['a', 'b']]],
    ['brackets inside strings do not count', '{"a":"[[[[{{{{","b":"\\"[[["}', 1, []],
    ['an array index in the path', '{"a":[1,{"x":[[1]]}]}', 3, [['a', 1, 'x']]],
    [
      'two separate deep values',
      '[[[1]],[[2]]]',
      2,
      [
        [0, 0],
        [1, 0],
      ],
    ],
    ['a key after an escaped quote', '{"k\\"":{"v":[[0]]}}', 3, [['k\\"', 'v', 0]]],
    ['unclosed, as invalid JSON may be', '[[[[', 2, [[0, 0]]],
  ])('%s', (_label, text, max, paths) => {
    expect(findTooDeep(text, max).map((f) => f.path)).toEqual(paths);
  });

  it('replaces each over-deep value by null and leaves valid JSON of at most the limit', () => {
    const text = `[{"a":1,"deep":${nested(5000)}},{"b":2}]`;
    const found = findTooDeep(text, 64);
    const kept = withoutTooDeep(text, found);
    expect(findTooDeep(kept, 64)).toEqual([]);
    expect(kept).toBe(`[{"a":1,"deep":${'['.repeat(62)}null${']'.repeat(62)}},{"b":2}]`);
    expect(JSON.parse(kept)[1]).toEqual({ b: 2 });
  });

  it('scans a 5,000,000-level body in one pass', () => {
    const started = performance.now();
    expect(findTooDeep(nested(5_000_000), 64)).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it.each([
    [['activity', 'meta', 0, 0], 'activity.meta[0][0]'],
    [[], 'body'],
    [[3], '[3]'],
  ])('names the field %j as %s', (path, name) => expect(describePath(path)).toBe(name));

  it('shortens a long path in the middle', () => {
    expect(describePath(['activity', ...Array(64).fill('meta')])).toMatch(/^activity\.meta\.meta.*….*meta$/);
    expect(describePath(['activity', ...Array(64).fill('meta')]).length).toBeLessThan(90);
  });
});

describe('bounding a receipt request', () => {
  const event = { smsId: 'sms-1', providerMessageId: 'p-1', providerStatus: 'delivered', status: 'delivered' as const };
  it.each([
    ['within bounds', [event], 2, { ok: true }],
    ['too many events', [event, event, event], 2, { ok: false, status: 413 }],
    ['an id longer than any provider uses', [{ ...event, providerMessageId: 'x'.repeat(129) }], 2, { ok: false, status: 400 }],
  ])('%s', (_label, events, max, expected) => expect(boundReceiptEvents(events, max)).toMatchObject(expected));

  it('cuts long provider texts', () => {
    const result = boundReceiptEvents([{ ...event, providerStatus: 's'.repeat(1_000_000), errorCode: 'e'.repeat(500) }], 10);
    expect(result.ok && result.events[0]!.providerStatus.length).toBe(64);
    expect(result.ok && result.events[0]!.errorCode!.length).toBe(64);
  });
});

describe('the real server under deep and large bodies', () => {
  it('answers 400 naming the field for a single message whose activity nests 5,000 levels', async () => {
    gw = await startTestGateway();
    const res = await gw.post('/channels/sms/single', deepMessage('deep-single', 5_000));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/^activity\.meta\[0\].*: nested deeper than 64 levels \(server\.max_json_depth\)$/);
    // A message at the limit is sent: 64 levels, the message object counted as the first.
    expect((await gw.post('/channels/sms/single', deepMessage('at-limit', 62))).status).toBe(200);
    expect((await gw.post('/channels/sms/single', deepMessage('over-limit', 63))).status).toBe(400);
  });

  it('fails only the deep entry of a batch and sends the others', async () => {
    gw = await startTestGateway();
    const body = `[${JSON.stringify(smsMessage('b-1'))},${deepMessage('b-deep', 5_000)},${deepMessage('b-limit', 62)}]`;
    const res = await gw.post('/channels/sms/batch', body);
    expect(res.status).toBe(200);
    expect(res.json.successful.map((e: { id: string }) => e.id)).toEqual(['b-1', 'b-limit']);
    expect(res.json.failed).toEqual([{ id: 'b-deep', error: expect.stringMatching(/^activity\.meta.*nested deeper than 64 levels/) }]);
  });

  it('takes the limit from server.max_json_depth', async () => {
    gw = await startTestGateway({ server: { max_json_depth: 4 } });
    expect((await gw.post('/channels/sms/single', deepMessage('d2', 2))).status).toBe(200);
    const res = await gw.post('/channels/sms/single', deepMessage('d3', 3));
    expect(res).toMatchObject({ status: 400, json: { error: 'activity.meta[0][0]: nested deeper than 4 levels (server.max_json_depth)' } });
  });

  it('refuses a deep receipt body and one with too many events, storing nothing', async () => {
    gw = await startTestGateway({ delivery: { max_receipt_events: 3 }, providers: { sandbox: { receipt_secret: 'receipt-secret-for-tests-0123456789' } } });
    const post = (body: string) =>
      fetch(`${gw!.url}/dlr/sandbox`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-sandbox-signature': createHmac('sha256', 'receipt-secret-for-tests-0123456789').update(body).digest('hex'),
        },
        body,
      });
    const deep = await post(`[{"sms_id":"x","message_id":"m","status":"delivered","extra":${nested(5_000)}}]`);
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: string }).error).toMatch(/nested deeper than 64 levels/);
    const many = await post(JSON.stringify(Array.from({ length: 4 }, (_, i) => ({ sms_id: `s-${i}`, message_id: `m-${i}`, status: 'delivered' }))));
    expect(many.status).toBe(413);
    expect((await gw.gateway.sweep()).rematched).toBe(0);
  });
});

describe('receipts set aside', () => {
  it('are deleted by the sweep once delivery.parked_receipt_retention has passed', async () => {
    let time = Date.now();
    gw = await startTestGateway(
      {
        delivery: { parked_receipt_ttl: '1h', parked_receipt_retention: '2h' },
        providers: { sandbox: { receipt_secret: 'receipt-secret-for-tests-0123456789' } },
      },
      { now: () => time },
    );
    const body = JSON.stringify([{ sms_id: 'never-sent', message_id: 'm-unknown', status: 'delivered' }]);
    const res = await fetch(`${gw.url}/dlr/sandbox`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-sandbox-signature': createHmac('sha256', 'receipt-secret-for-tests-0123456789').update(body).digest('hex'),
      },
      body,
    });
    expect(res.status).toBe(200);
    time += 61 * 60_000;
    expect(await gw.gateway.sweep()).toMatchObject({ expired: 1, deleted: 0 });
    time += 60 * 60_000;
    expect(await gw.gateway.sweep()).toMatchObject({ expired: 0, deleted: 0 });
    time += 60 * 60_000;
    expect(await waitFor(() => gw!.gateway.sweep().then((r) => r.deleted === 1 && r))).toMatchObject({ deleted: 1 });
  });
});

describe('log lines', () => {
  it('carry at most 1,000 characters of any value, error messages included', async () => {
    const { createLogger } = await import('../../src/observability/logger.js');
    const lines: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    logger.warn({ provider_status: 's'.repeat(1_000_000), err: new Error('e'.repeat(1_000_000)) }, 'receipt refused');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(4_000);
    const line = JSON.parse(lines[0]!);
    expect(line.provider_status).toMatch(/^s{1000}… \(1000000 characters\)$/);
    expect(line.err.message).toMatch(/^e{1000}… \(1000000 characters\)$/);
  });
});
