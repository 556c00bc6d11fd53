/**
 * Dead CRM events in a real browser (Debian's chromium driven by playwright-core, as test/console/console.browser.test.ts):
 * the fake Integration API refuses, relay.max_attempts 1 dead-letters the event at once; the console's event
 * outbox shows it (readable at 390 px, linking to the list), the list shows its reason, and its Replay button
 * sends it to the CRM. Without chromium this fails (it never skips): .ci/run installs it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchTestBrowser, type TestBrowser } from '../helpers/chromium.js';
import { FakeIntegrationApi } from '../fakes/crm-integration.js';
import { relay, RELAY_KEY, thinEvent } from '../helpers/events.js';
import { startTestGateway, TEST_ADMIN_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';

const crm = new FakeIntegrationApi();
let gw: TestGateway;
let page: Page;
let testBrowser: TestBrowser | undefined;
const shots = mkdtempSync(join(tmpdir(), 'console-events-screenshots-'));

beforeAll(async () => {
  await crm.start();
  gw = await startTestGateway({
    relay: { api_keys: [RELAY_KEY], poll_interval: '10ms', retry_initial_ms: 20, retry_max_ms: 100, max_attempts: 1 },
    crm: { integration: { url: crm.url } },
  });
  testBrowser = await launchTestBrowser();
  ({ page } = testBrowser);
}, 120_000);

afterAll(async () => {
  await testBrowser?.close();
  await gw?.close();
  await crm.stop();
});

/** At a phone's width the page never scrolls sideways and the element named is inside the screen; screenshots of both widths. */
async function expectReadableAt390(name: string, selector: string) {
  await page.setViewportSize({ width: 390, height: 844 });
  const box = await page.evaluate(
    `(() => { const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect(); return { page: document.documentElement.scrollWidth, left: r.left >= 0, right: r.right <= 390 }; })()`,
  );
  expect(box, name).toEqual({ page: 390, left: true, right: true });
  await page.screenshot({ path: join(shots, `${name}-390px.png`), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

describe('dead CRM events in chromium', () => {
  it('shows a dead event on the console and in the list with its reason, and replays it from the page to the CRM', async () => {
    process.stderr.write(`console event screenshots: ${shots}\n`);
    crm.failNext(1, 503);
    const eventId = (await relay(gw, 'POST', '/v2/integration/login', thinEvent('browser-player'))).json.event_id as string;
    const admin = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
    await waitFor(async () => (await gw.get('/admin/events?status=dead', admin)).json.events.length === 1, 10_000, 'the dead event');

    await page.goto(`${gw.url}/console`);
    await page.fill('input[name="key"]', TEST_ADMIN_KEY);
    await page.click('button[type="submit"]');
    await page.waitForSelector('section#crm-events');
    expect(await page.locator('td[data-events="dead"]').textContent()).toBe('1');
    expect(await page.locator('td[data-events="unsent"]').textContent()).toBe('0');
    await expectReadableAt390('dashboard-crm-events', 'section#crm-events a[href="/console/dead-events"]');

    await page.click('section#crm-events a[href="/console/dead-events"]');
    await page.waitForSelector('table[data-table="dead-events"]');
    const rows = page.locator('table[data-table="dead-events"] tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getAttribute('data-event')).toBe(eventId);
    const text = await rows.first().textContent();
    expect(text).toContain('LOGIN_V2');
    expect(text).toContain('browser-player');
    expect(text).toContain('HTTP 503');
    await expectReadableAt390('dead-events', 'section#dead-events h2');

    await rows.first().locator('button[name="only"]').click();
    await expect.poll(() => page.locator('[role="status"]').first().textContent()).toContain('Replayed 1 dead CRM event');
    await waitFor(() => crm.accepted.find((r) => r.eventId === eventId), 10_000, 'the replayed event at the CRM');
    expect(crm.accepted.filter((r) => r.eventId === eventId)).toHaveLength(1);
    await page.reload();
    expect(await page.locator('table[data-table="dead-events"] tbody tr').count()).toBe(0);
    await page.goto(`${gw.url}/console`);
    expect(await page.locator('td[data-events="dead"]').textContent()).toBe('0');
  }, 120_000);
});
