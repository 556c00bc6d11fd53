/**
 * A preview before sending (docs/costs.md "Preview"): POST /admin/sms/preview and the console's pages (the preview and
 * the costs report) answer from the send path's own encoding code and the configured rate tables.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    providers: { backup: { type: 'sandbox', dlr_delay_ms: 0 } },
    costs: {
      rates: {
        sandbox: { currency: 'EUR', per_segment: { GB: '0.0400', '*': '0.0700' } },
        backup: { currency: 'USD', per_segment: { US: '0.0079' } },
      },
    },
  });
});
afterAll(async () => gw?.close());

const preview = (body: unknown) => gw.post('/admin/sms/preview', body, admin);

describe('POST /admin/sms/preview', () => {
  it('answers GSM-7 with the characters left, and the cost through each provider to the recipient’s country', async () => {
    const res = await preview({ text: 'Your bonus is waiting {code}', recipient: '+447400123456' });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      encoding: 'gsm7',
      segments: 1,
      // { and } are GSM-7 extension characters: two septets each.
      characters: 30,
      characters_per_segment: 160,
      characters_left: 130,
      over_max_segments: false,
      smart_encoding: false,
      ucs2_characters: [],
      country: 'GB',
      prices: [
        { provider: 'sandbox', currency: 'EUR', per_segment: '0.04', total: '0.04' },
        { provider: 'backup', currency: null, per_segment: null, total: null },
      ],
    });
  });

  it('names the characters that force UCS-2, with their GSM-7 look-alikes where they exist, and prices every segment', async () => {
    const res = await preview({ text: `“Free spins” — today 🎰 ${'x'.repeat(60)}`, country: 'US' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      encoding: 'ucs2',
      segments: 2,
      characters_per_segment: 67,
      ucs2_characters: [
        { character: '“', code_point: 'U+201C', gsm7_look_alike: '"' },
        { character: '”', code_point: 'U+201D', gsm7_look_alike: '"' },
        { character: '—', code_point: 'U+2014', gsm7_look_alike: '-' },
        { character: '🎰', code_point: 'U+1F3B0', gsm7_look_alike: null },
      ],
      country: 'US',
      prices: [
        { provider: 'sandbox', currency: 'EUR', per_segment: '0.07', total: '0.14' },
        { provider: 'backup', currency: 'USD', per_segment: '0.0079', total: '0.0158' },
      ],
    });
    expect(res.json.characters + res.json.characters_left).toBe(2 * 67);
  });

  it('says when a text needs more segments than sms.max_segments allows', async () => {
    const res = await preview({ text: 'x'.repeat(153 * 10 + 1) });
    expect(res.json).toMatchObject({ segments: 11, over_max_segments: true, country: null });
  });

  it.each([
    ['no text', {}, /text/],
    ['an empty text', { text: '' }, /text/],
    ['a country in lower case', { text: 'hi', country: 'gb' }, /country/],
    ['a recipient that is no number', { text: 'hi', recipient: 'call me' }, /recipient/],
    ['an unknown encoding', { text: 'hi', encoding: 'latin1' }, /encoding/],
    ['an unknown field', { text: 'hi', price: 1 }, /price/],
    ['GSM-7 forced on a text that is not', { text: 'Привет', encoding: 'gsm7' }, /text: characters not in GSM-7/],
  ])('refuses %s with 400 naming the field', async (_label, body, error) => {
    const res = await preview(body);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(error);
  });

  it('needs the admin key', async () => {
    expect((await gw.post('/admin/sms/preview', { text: 'hi' })).status).toBe(401);
  });
});

describe("the console's preview and costs pages", () => {
  async function signIn(): Promise<string> {
    const login = await fetch(`${gw.url}/console/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ key: TEST_ADMIN_KEY }) });
    return login.headers.get('set-cookie')!.split(';')[0]!;
  }
  const page = async (path: string, cookie?: string) => {
    const res = await fetch(gw.url + path, { headers: cookie ? { cookie } : {} });
    return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
  };

  it('preview: the same answer as the API, escaped', async () => {
    const cookie = await signIn();
    const shown = await page(`/console/preview?${new URLSearchParams({ text: '<b>“hi”</b>', country: 'GB' })}`, cookie);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('<dd data-field="encoding">UCS-2</dd>');
    expect(shown.text).toContain('&lt;b&gt;');
    expect(shown.text).not.toContain('<b>“hi”</b>');
    expect(shown.text).toMatch(/<td>U\+201C<\/td><td><code>&quot;<\/code><\/td>/);
    expect(shown.text).toContain('<td data-field="total">0.04 EUR</td>');
    expect((await page('/console/preview?text=hi&country=Britain', cookie)).status).toBe(400);
    expect((await page('/console/preview?text=hi')).status).toBe(401);
  });

  it('costs: the report grouped as asked, and its CSV', async () => {
    expect((await gw.post('/channels/sms/single', smsMessage('p-1', { recipient: '+447400123456' }))).status).toBe(200);
    const cookie = await signIn();
    const shown = await waitFor(async () => {
      const p = await page('/console/costs?group_by=provider,country', cookie);
      return p.text.includes('data-field="spend">0.04<') ? p : undefined;
    });
    expect(shown.status).toBe(200);
    const csv = await page('/console/costs?group_by=country&format=csv', cookie);
    expect(csv.type).toMatch(/^text\/csv/);
    expect(csv.text).toMatch(/^country,currency,messages,/);
    expect(csv.text).toContain('GB,EUR,1,1,');
    expect((await page('/console/costs?group_by=planet', cookie)).status).toBe(400);
  });
});
