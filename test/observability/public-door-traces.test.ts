/**
 * Who decides whether a request's trace is kept (docs/tracing.md): at `sampling_ratio: 0` a forged
 * callback carrying a sampled `traceparent` exported its spans, 100 of 100. A public door (the provider callbacks, the
 * sign-ins, probes and documents) and a path no route serves start a trace of their own, sampled like any new one,
 * linked to the caller's; a route whose callers hold a credential still follows the CRM's sampled flag.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followsCallerTrace } from '../../src/observability/tracing.js';
import { startOtlpFake, type OtlpFake } from '../fakes/otlp.js';
import { smsMessage, startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SAMPLED = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
/** OTLP's SpanKind of a SERVER span. */
const SERVER = 2;

describe('whether the caller’s traceparent parents the request’s span (followsCallerTrace)', () => {
  it.each<[string, string, string, boolean]>([
    ['a provider callback (receipts)', '/dlr/twilio', '/dlr/:provider', false],
    ['a provider callback (players’ messages)', '/mo/vonage', '/mo/:provider', false],
    ['the console’s sign-in', '/console/login', '/console/login', false],
    ['the token endpoint', '/oauth/token', '/oauth/token', false],
    ['a probe', '/healthz', '/healthz', false],
    ['the API document', '/openapi.json', '/openapi.json', false],
    ['/metrics, which metrics.public opens to anyone', '/metrics', '/metrics', false],
    ['a path no route serves', '/no/such/route', 'unmatched', false],
    ['the CRM’s single send', '/channels/sms/single', '/channels/sms/single', true],
    ['the operator API', '/userdetails/u-1', '/userdetails/:userid', true],
    ['the relay', '/relay/v2/integration/user/consents', '/relay/v2/integration/user/consents', true],
    ['the admin API', '/admin/messages/01X', '/admin/messages/:sms_id', true],
  ])('%s: %s', (_label, path, route, follows) => {
    expect(followsCallerTrace(path, route)).toBe(follows);
  });
});

describe('at sampling_ratio 0', () => {
  let otlp: OtlpFake;
  let gw: TestGateway;

  beforeAll(async () => {
    otlp = await startOtlpFake();
    gw = await startTestGateway({
      providers: {
        twilio: { type: 'twilio', account_sid: `AC${'0'.repeat(32)}`, auth_token: 'twilio-token-traces', from: '+15005550006', base_url: 'http://127.0.0.1:9' },
      },
      observability: { tracing: { enabled: true, endpoint: otlp.url, sampling_ratio: 0, export_interval: '50ms' } },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await otlp?.close();
  });

  it('exports none of 100 forged callbacks carrying a sampled traceparent, and still follows the CRM’s sampled send', async () => {
    for (let i = 0; i < 100; i++) {
      const door = i % 2 ? '/dlr/twilio?sms_id=01X' : '/mo/twilio';
      const res = await fetch(gw.url + door, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'Zm9yZ2VkLXNpZ25hdHVyZS0yMGI=', traceparent: SAMPLED },
        body: 'MessageSid=SM1&MessageStatus=delivered',
      });
      expect(res.status).toBe(403);
    }
    // The CRM's request after them, with the same sampled flag: its trace is kept. Once its spans are exported, the
    // callbacks' would have been too (one batch processor, in order).
    const sent = await gw.post('/channels/sms/single', smsMessage('traced-after-forgeries'), { traceparent: SAMPLED });
    expect(sent.status).toBe(200);
    await waitFor(() => otlp.spans.find((s) => s.name === 'POST /channels/sms/single'), 10_000, 'the CRM request’s span');
    // SERVER spans of the callback doors: the sandbox's own receipt for the send (a CLIENT span under the send, then a
    // /dlr/sandbox request of its own trace) is no forged callback's.
    const doorSpans = otlp.spans.filter((s) => s.kind === SERVER && /^\/(dlr\/twilio|mo\/twilio)/.test(String(s.attributes['url.path'])));
    expect(doorSpans).toEqual([]);
    expect(otlp.spans.every((s) => s.traceId === TRACE_ID)).toBe(true);
  });
});
