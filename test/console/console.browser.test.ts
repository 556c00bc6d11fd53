/**
 * The console in a real browser: Debian's chromium driven by playwright-core, against a real gateway. Without
 * chromium this fails (it never skips): .ci/run installs it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchTestBrowser, type TestBrowser } from '../helpers/chromium.js';
import { FakeCrm } from '../fakes/crm.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeCrm();
let gw: TestGateway;
let browser: BrowserContext;
let page: Page;
let testBrowser: TestBrowser | undefined;

const cell = (window: 'hour' | 'day', outcome: string, provider = 'sandbox') =>
  page.locator(`table[data-window="${window}"] tr[data-provider="${provider}"] td[data-outcome="${outcome}"]`);
const backlog = (state: string) => page.locator(`td[data-backlog="${state}"]`);

beforeAll(async () => {
  await crm.start();
  // The console shows totals over the whole ledger: this gateway gets one of its own.
  gw = await startTestGateway({ crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' }, delivery: { poll_interval: '20ms', max_attempts: 1 } });
  testBrowser = await launchTestBrowser();
  ({ context: browser, page } = testBrowser);
}, 120_000);

afterAll(async () => {
  await testBrowser?.close();
  await gw?.close();
  await crm.stop();
});

/** Full-page screenshots of each page, kept for people to look at (the path is printed). */
const shots = mkdtempSync(join(tmpdir(), 'console-screenshots-'));
async function screenshot(name: string) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** At a phone's width the page itself never scrolls sideways: wide tables scroll inside their own box. */
async function expectNoHorizontalOverflow(name: string) {
  await page.setViewportSize({ width: 390, height: 844 });
  // Run in the page (a string: this project's TypeScript has no DOM types).
  const widths = await page.evaluate(
    "({ page: document.documentElement.scrollWidth, header: document.querySelector('header').getBoundingClientRect().width })",
  );
  expect(widths, name).toEqual({ page: 390, header: 390 });
  await screenshot(`${name}-390px`);
  await page.setViewportSize({ width: 1280, height: 900 });
  await screenshot(name);
}

describe('the console in chromium', () => {
  it('signs in, shows numbers that follow the sends, finds a message by phone number, shows its story and replays a dead letter', async () => {
    process.stderr.write(`console screenshots: ${shots}\n`);
    await page.goto(`${gw.url}/console`);
    await expectNoHorizontalOverflow('sign-in');
    await page.fill('input[name="key"]', 'not-the-admin-key');
    await page.click('button[type="submit"]');
    await expect.poll(() => page.locator('[role="alert"]').textContent()).toContain('not the admin key');

    await page.fill('input[name="key"]', TEST_ADMIN_KEY);
    await page.click('button[type="submit"]');
    await page.waitForSelector('section#totals');
    expect(page.url()).toBe(`${gw.url}/console`);
    const [cookie] = await browser.cookies(`${gw.url}/console`);
    expect(cookie).toMatchObject({ name: 'console_session', httpOnly: true, sameSite: 'Strict', path: '/console' });
    expect(cookie!.value).not.toContain(TEST_ADMIN_KEY);
    expect(await cell('hour', 'submitted').textContent()).toBe('0');

    // The CRM refuses the first conversion post; with max_attempts 1 that conversion is dead at once.
    crm.failNext(1, 500);
    const doomed = await gw.post('/channels/sms/single', smsMessage('browser-dead', { recipient: '+447700900777' }));
    await waitFor(
      async () => (await gw.get(`/admin/messages/${doomed.json.sms_id}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` })).json.conversions?.[0]?.dead === 1,
      10_000,
      'a dead conversion',
    );
    const undelivered = await gw.post('/channels/sms/single', smsMessage('browser-undelivered', { recipient: '+447700900001' }));
    expect((await gw.post('/channels/sms/single', smsMessage('browser-rejected', { recipient: '+447700900004' }))).status).toBe(400);
    await waitFor(() => crm.conversions.some((c) => c.sms_id === undelivered.json.sms_id), 10_000, 'the undelivered conversion');

    await page.reload();
    expect(await cell('hour', 'submitted').textContent()).toBe('2');
    expect(await cell('hour', 'delivered').textContent()).toBe('1');
    expect(await cell('hour', 'undelivered').textContent()).toBe('1');
    expect(await cell('hour', 'rejected').textContent()).toBe('1');
    expect(await cell('day', 'submitted', 'all').textContent()).toBe('2');
    expect(await cell('hour', 'rate').textContent()).toBe('50.0 %');
    expect(await backlog('dead').textContent()).toBe('1');
    expect(await page.locator('section#charts svg rect[fill="#d4a72c"]').count()).toBeGreaterThanOrEqual(2); // undelivered, in both charts

    // Support's question: "player with +44 7700 900001 got no SMS". The number as they would type it.
    await page.fill('input[name="recipient"]', '+44 7700 900001');
    await page.click('section#search button[type="submit"]');
    await page.waitForSelector('table[data-table="results"]');
    const rows = page.locator('table[data-table="results"] tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getAttribute('data-sms-id')).toBe(undelivered.json.sms_id);
    expect(await rows.first().locator('[data-field="recipient"]').textContent()).toBe('+447700900001');
    expect(await rows.first().locator('[data-field="status"]').textContent()).toBe('undelivered');
    await expectNoHorizontalOverflow('search');

    // Numbers other than the one searched for are masked.
    await page.selectOption('select[name="status"]', 'refused');
    await page.fill('input[name="recipient"]', '');
    await page.click('section#search button[type="submit"]');
    await page.waitForSelector('table[data-table="results"]');
    expect(await page.locator('table[data-table="results"] [data-field="recipient"]').allTextContents()).toEqual(['+44********04']);

    // The message's story: its receipt and its conversion, in time order.
    await page.goto(`${gw.url}/console?recipient=%2B447700900001`);
    await page.click(`a[href^="/console/messages/${undelivered.json.sms_id}"]`);
    await page.waitForSelector('section#story');
    expect(await page.locator('[data-field="sms_id"]').textContent()).toBe(undelivered.json.sms_id);
    expect(await page.locator('[data-field="recipient"]').textContent()).toBe('+447700900001');
    const timeline = page.locator('ol[data-list="timeline"] li');
    expect(await timeline.evaluateAll((items) => items.map((i) => i.getAttribute('data-kind')))).toEqual([
      'received',
      'send',
      'receipt',
      'conversion',
      'webhook',
    ]);
    expect(await page.locator('li[data-kind="receipt"]').textContent()).toContain('undelivered');
    expect(await page.locator('li[data-kind="receipt"]').textContent()).toContain('verified');
    expect(await page.locator('li[data-kind="webhook"]').textContent()).toContain('accepted (HTTP 200)');
    await expectNoHorizontalOverflow('message');

    // The dead letter, its reason, and its replay from the list.
    await page.click('nav a[href="/console/dead-letters"]');
    await page.waitForSelector('table[data-table="dead-letters"]');
    const dead = page.locator('table[data-table="dead-letters"] tbody tr');
    expect(await dead.count()).toBe(1);
    expect(await dead.first().textContent()).toContain('browser-dead');
    expect(await dead.first().textContent()).toContain('HTTP 500');
    await expectNoHorizontalOverflow('dead-letters');
    await dead.first().locator('button[name="only"]').click();
    await expect.poll(() => page.locator('[role="status"]').first().textContent()).toContain('Replayed 1 dead conversion');
    await waitFor(() => crm.conversions.some((c) => c.sms_id === doomed.json.sms_id), 10_000, 'the replayed conversion');
    await page.goto(`${gw.url}/console`);
    expect(await backlog('dead').textContent()).toBe('0');
    await expectNoHorizontalOverflow('dashboard');

    // The API reference: Swagger UI from this origin, nothing refused by the page's CSP.
    const refused: string[] = [];
    page.on('console', (message) => void (/Content Security Policy|Refused to/i.test(message.text()) && refused.push(message.text())));
    await page.goto(`${gw.url}/docs`);
    await page.waitForSelector('.swagger-ui .opblock-summary-path');
    expect(await page.locator('.swagger-ui .opblock-summary-path[data-path="/admin/messages"]').count()).toBe(1);
    await page.locator('.swagger-ui .opblock-summary-path[data-path="/admin/messages"]').first().click();
    await page.waitForSelector('.swagger-ui .parameters');
    expect(await page.locator('.swagger-ui .parameters').first().textContent()).toContain('recipient');
    expect(refused).toEqual([]);
    await expectNoHorizontalOverflow('docs');

    await page.goto(`${gw.url}/console`);
    await page.click('header form button[type="submit"]');
    await page.waitForSelector('input[name="key"]');
    expect(await browser.cookies(`${gw.url}/console`)).toEqual([]);
  }, 120_000);
});
