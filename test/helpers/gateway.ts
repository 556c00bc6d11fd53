/**
 * Starts the real gateway for a test: real HTTP server on an ephemeral port, a fresh ledger (a SQLite file in a
 * temp dir, or a new PostgreSQL database when TEST_DATABASE_URL is set), the sandbox provider, silent logs.
 * Nothing is mocked.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { parseConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import type { Clock } from '../../src/kit/clock.js';
import { dropTestDatabase, testDatabaseUrl, testLayout } from './database.js';

export const TEST_API_KEY = 'test-crm-key';
export const TEST_ADMIN_KEY = 'test-admin-key-0123456789';
/** The sandbox's receipt key in test gateways, so a test can post receipts the sandbox would have signed. */
export const TEST_SANDBOX_SECRET = 'test-sandbox-receipt-secret';

/** The headers of a sandbox receipt body signed as the test gateways' sandbox signs it. */
export function sandboxReceiptHeaders(body: string, secret = TEST_SANDBOX_SECRET): Record<string, string> {
  return { 'content-type': 'application/json', 'x-sandbox-signature': createHmac('sha256', secret).update(body).digest('hex') };
}

type Doc = Record<string, unknown>;

/** `over` laid on `base`: maps merged key by key, anything else replaced. */
export function mergeConfigDocument(base: Doc, over: Doc): Doc {
  const out: Doc = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && base[k] && typeof base[k] === 'object' ? mergeConfigDocument(base[k] as Doc, v as Doc) : v;
  }
  return out;
}

export function testConfigDocument(dir: string, overrides: Doc = {}): Doc {
  const base: Doc = {
    // Test keys are short and URLs loopback: development warns about them instead of refusing to start.
    server: { environment: 'development', host: '127.0.0.1', port: 0 },
    database: { url: testDatabaseUrl(dir), layout: testLayout() },
    // A budget no functional test reaches from 127.0.0.1; test/system/hostile-input.test.ts sets a small one.
    auth: { mode: 'api_key', api_keys: [TEST_API_KEY], failure_budget: 100_000 },
    providers: { sandbox: { type: 'sandbox', aliases: ['test'], dlr_delay_ms: 0, receipt_secret: TEST_SANDBOX_SECRET } },
    admin: { api_key: TEST_ADMIN_KEY },
    log: { level: 'silent' },
  };
  return mergeConfigDocument(base, overrides);
}

export interface TestGateway {
  gateway: Gateway;
  url: string;
  dir: string;
  config: Readonly<Config>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any; headers: Headers }>;
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; json: any; headers: Headers }>;
  put(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any; headers: Headers }>;
  /** POSTs sandbox receipts signed with TEST_SANDBOX_SECRET, as the sandbox itself would. */
  postReceipt(receipts: unknown, provider?: string): Promise<{ status: number; json: any; headers: Headers }>;
  /** PUT to the admin API with the test admin key. */
  adminPut(path: string, body: unknown): Promise<{ status: number; json: any; headers: Headers }>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  dir?: string;
  now?: () => number;
  clock?: Clock;
  logger?: Logger;
  /** The outbox kinds (src/outboxes.ts OUTBOXES when absent). */
  outboxes?: GatewayOptions['outboxes'];
}

export async function startTestGateway(overrides: Doc = {}, options: TestGatewayOptions = {}): Promise<TestGateway> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'crm-sms-gw-'));
  const config = parseConfig(testConfigDocument(dir, overrides), {});
  const gateway = await startGateway(config, {
    logger: options.logger ?? pino({ level: 'silent' }),
    now: options.now,
    clock: options.clock,
    outboxes: options.outboxes,
  });
  const call = async (method: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(gateway.url + path, {
      method,
      headers: { 'x-api-key': TEST_API_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, json: json as any, headers: res.headers };
  };
  return {
    gateway,
    url: gateway.url,
    dir,
    config,
    post: (path, body, headers) => call('POST', path, body, headers),
    get: (path, headers) => call('GET', path, undefined, headers),
    put: (path, body, headers) => call('PUT', path, body, headers),
    postReceipt: (receipts, provider = 'sandbox') => {
      const body = JSON.stringify(receipts);
      return call('POST', `/dlr/${provider}`, body, sandboxReceiptHeaders(body));
    },
    adminPut: (path, body) => call('PUT', path, body, { authorization: `Bearer ${TEST_ADMIN_KEY}` }),
    async close() {
      await gateway.close();
      // A dir handed in is shared with other gateways (and its database with it): its owner cleans up.
      if (!options.dir) {
        await dropTestDatabase(dir);
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** An SMS message object as the CRM sends it. */
export function smsMessage(id: string | number, overrides: Record<string, unknown> = {}) {
  return {
    activity: { id, brand_id: 7, user_id: 'u-1', activity_id: 11, action_group_id: 3, trigger_hash: 'th', action_id: 5 },
    content: 'Your bonus is waiting',
    recipient: '+447700900123',
    sender_name: 'Casino',
    provider_name: 'sandbox',
    encoding: 'auto',
    ...overrides,
  };
}

/** Polls until `check` returns a truthy value (never sleeps a fixed time, docs/design.md §7). */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
