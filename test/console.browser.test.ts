/**
 * The console in a real browser: Debian's chromium driven by playwright-core, against a real gateway. Without
 * chromium this fails (it never skips): .ci/run installs it.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeCrm } from './fakes/crm.js';
import { smsMessage, startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from './helpers/gateway.js';

const CHROMIUM = '/usr/bin/chromium';
const crm = new FakeCrm();
let gw: TestGateway;
let browser: BrowserContext;
let page: Page;
let profile: string;

const cell = (window: 'hour' | 'day', outcome: string, provider = 'sandbox') =>
  page.locator(`table[data-window="${window}"] tr[data-provider="${provider}"] td[data-outcome="${outcome}"]`);
const backlog = (state: string) => page.locator(`td[data-backlog="${state}"]`);

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: the console browser test needs Debian's chromium (apt-get install -y chromium, as .ci/run does)`);
  }
  await crm.start();
  // The console shows totals over the whole ledger: this gateway gets one of its own.
  gw = await startTestGateway(
    { crm: { webhook_url: crm.url, webhook_api_key: 'test-webhook-key' }, delivery: { poll_interval: '20ms', max_attempts: 1 } },
  );
  profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await crm.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('the console in chromium', () => {
  it('signs in, shows numbers that follow the sends, finds a message and replays a dead conversion', async () => {
    await page.goto(`${gw.url}/console`);
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
    const doomed = await gw.post('/channels/sms/single', smsMessage('browser-dead'));
    await waitFor(async () => (await gw.get(`/admin/messages/${doomed.json.sms_id}`, { authorization: `Bearer ${TEST_ADMIN_KEY}` })).json.conversions?.[0]?.dead === 1, 10_000, 'a dead conversion');
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

    await page.fill('input[name="q"]', 'browser-undelivered');
    await page.click('section#search button[type="submit"]');
    await page.waitForSelector('section#story');
    expect(await page.locator('[data-field="sms_id"]').textContent()).toBe(undelivered.json.sms_id);
    expect(await page.locator('[data-field="delivery status"]').textContent()).toBe('undelivered');
    expect(await page.locator('table[data-table="receipts"] tbody').textContent()).toContain('undelivered');
    expect(await page.locator('table[data-table="conversions"] tbody tr').first().textContent()).toContain('undelivered');

    await page.fill('input[name="q"]', doomed.json.sms_id);
    await page.click('section#search button[type="submit"]');
    await page.waitForSelector('section#story');
    expect(await page.locator('[data-field="activity.id"]').textContent()).toBe('browser-dead');
    expect(await page.locator('table[data-table="conversions"] tbody tr').first().textContent()).toContain('yes');

    await page.click('section#outbox button[type="submit"]');
    await expect.poll(() => page.locator('[role="status"]').textContent()).toContain('Replayed 1 dead conversion');
    await waitFor(() => crm.conversions.some((c) => c.sms_id === doomed.json.sms_id), 10_000, 'the replayed conversion');
    await page.goto(`${gw.url}/console`);
    expect(await backlog('dead').textContent()).toBe('0');

    await page.click('header form button[type="submit"]');
    await page.waitForSelector('input[name="key"]');
    expect(await browser.cookies(`${gw.url}/console`)).toEqual([]);
  }, 120_000);
});
