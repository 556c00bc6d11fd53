/**
 * What production refuses and development warns about (docs/security.md, docs/trust.md): settings that let a
 * stranger in or make the gateway believe what it cannot verify. Pure: takes the config, returns one finding per
 * problem, each naming its key (and, for the keys production needs written out, whether the value is a default:
 * src/config/load.ts keeps that per loaded config). A `refuse` finding makes `serve`, `flush` and `migrate` exit 78 in production and is
 * a warning in development; a `warn` finding (traffic in clear text, metrics open to anyone who can reach the port)
 * may be right on a private network, so it is logged as a warning at start in every environment.
 */
import { isIP } from 'node:net';
import { defaultedKeys } from './load.js';
import type { Config } from './schema.js';

export interface Finding {
  key: string;
  problem: string;
  severity: 'refuse' | 'warn';
}

/** The development values the shipped config.yaml falls back to; they are public, so they are no secret. */
export const SHIPPED_DEVELOPMENT_VALUES: ReadonlySet<string> = new Set(['dev-crm-api-key', 'dev-webhook-key', 'dev-admin-key-change-me']);
export const MIN_CREDENTIAL_LENGTH = 16;
export const MIN_OAUTH_CLIENT_SECRET_LENGTH = 32;

/**
 * A key with whitespace at either end, or a control or invisible format character inside: what a key file ending in a
 * blank line or in spaces gives (the loader drops the one line break a file naturally ends with, src/config/load.ts).
 * No client can send it: HTTP parsers drop the whitespace around a header value and refuse control characters in one,
 * and nobody can see the character to type it.
 */
export function keyTextProblem(value: string): string | undefined {
  if (/^\s|\s$/u.test(value)) return 'begins or ends with whitespace (a key file ending in a blank line or in spaces?): no client can send it';
  if (/[\p{Cc}\p{Cf}]/u.test(value)) return 'holds a control or invisible character: no client can send it';
  return undefined;
}

function credentialProblem(value: string): string | undefined {
  if (SHIPPED_DEVELOPMENT_VALUES.has(value)) return 'is a shipped development value';
  const text = keyTextProblem(value);
  if (text) return text;
  if (value.length < MIN_CREDENTIAL_LENGTH) return `is shorter than ${MIN_CREDENTIAL_LENGTH} characters`;
  return undefined;
}

/**
 * A URL's host in one form: without brackets, in lower case, without the trailing dots of a fully qualified name
 * (`localhost.` is `localhost`), and an IPv4-mapped IPv6 address as its IPv4 (the URL parser writes
 * `[::ffff:127.0.0.1]` as `[::ffff:7f00:1]`). The URL parser has already written IPv4 shorthands out (`127.1`,
 * `0x7f000001` and `2130706433` are `127.0.0.1`, `0` is `0.0.0.0`).
 */
function canonicalHost(hostname: string): string {
  const host = hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.+$/, '');
  const mapped = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/.exec(host);
  if (!mapped) return host;
  if (mapped[1]) return mapped[1];
  const [high, low] = [Number.parseInt(mapped[2]!, 16), Number.parseInt(mapped[3]!, 16)];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** This machine: `localhost` and its subdomains (RFC 6761), 127.0.0.0/8, 0.0.0.0/8, `::1` and `::`, in any form of canonicalHost. */
export function isLoopbackHost(hostname: string): boolean {
  const host = canonicalHost(hostname);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const kind = isIP(host);
  if (kind === 4) return /^(127|0)\./.test(host);
  return kind === 6 && (host === '::1' || host === '::');
}

/** Loopback (isLoopbackHost), private (RFC 1918, unique-local IPv6), link-local or an unqualified host name such as `gateway`. */
export function isPrivateHost(hostname: string): boolean {
  if (isLoopbackHost(hostname)) return true;
  const host = canonicalHost(hostname);
  if (host.endsWith('.local') || host.endsWith('.internal')) return true;
  const kind = isIP(host);
  if (kind === 0) return !host.includes('.');
  if (kind === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    return a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
  }
  return /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
}

/** Several instances can only share state through PostgreSQL. */
export function runsSeveralInstances(config: Readonly<Config>): boolean {
  return /^postgres(ql)?:\/\//.test(config.database.url);
}

export function findUnsafeSettings(config: Readonly<Config>): Finding[] {
  const findings: Finding[] = [];
  const credential = (key: string, value: string | undefined) => {
    const problem = value === undefined ? undefined : credentialProblem(value);
    if (problem) findings.push({ key, problem, severity: 'refuse' });
  };
  config.auth.api_keys.forEach((k, i) => credential(`auth.api_keys[${i}]`, k));
  config.sms.api_keys?.forEach((k, i) => credential(`sms.api_keys[${i}]`, k));
  // The relay's keys let the operator's platform speak for players to the CRM (consents, bonuses): as strong as any.
  config.relay.api_keys.forEach((k, i) => credential(`relay.api_keys[${i}]`, k));
  credential('admin.api_key', config.admin.api_key);
  if (config.crm.webhook_url) credential('crm.webhook_api_key', config.crm.webhook_api_key);
  credential('auth.basic.password', config.auth.basic?.password);
  const oauth = config.auth.oauth;
  const oauthSecretProblem =
    oauth &&
    (keyTextProblem(oauth.client_secret) ??
      (oauth.client_secret.length < MIN_OAUTH_CLIENT_SECRET_LENGTH ? `is shorter than ${MIN_OAUTH_CLIENT_SECRET_LENGTH} characters` : undefined));
  if (oauthSecretProblem) findings.push({ key: 'auth.oauth.client_secret', problem: oauthSecretProblem, severity: 'refuse' });
  const keyText = (key: string, value: string | undefined) => {
    const problem = value === undefined ? undefined : keyTextProblem(value);
    if (problem) findings.push({ key, problem, severity: 'refuse' });
  };
  // Not sent by clients, but signing keys: one read with a stray line break fails every token the others signed.
  keyText('auth.oauth.signing_secret', oauth?.signing_secret);
  keyText('operator.session_tokens.secret', config.operator.session_tokens?.secret);
  if (oauth && !oauth.signing_secret && runsSeveralInstances(config)) {
    findings.push({
      key: 'auth.oauth.signing_secret',
      problem: "is not set while instances share a PostgreSQL database: each would refuse the others' tokens",
      severity: 'refuse',
    });
  }
  let realProvider: string | undefined;
  for (const [name, provider] of Object.entries(config.providers)) {
    if (provider.type === 'vonage' && !provider.signature_secret) {
      findings.push({ key: `providers.${name}.signature_secret`, problem: 'is not set: receipts cannot be verified and are all refused', severity: 'refuse' });
    }
    if (provider.type === 'sandbox' && !provider.receipt_secret) {
      findings.push({
        key: `providers.${name}.receipt_secret`,
        problem: 'is not set: receipts are signed with a random key of this process, which no other instance can verify',
        severity: 'refuse',
      });
    }
    if (provider.type === 'sandbox') credential(`providers.${name}.receipt_secret`, provider.receipt_secret);
    if (provider.type !== 'sandbox') realProvider ??= name;
  }
  const publicUrl = config.server.public_url;
  if (realProvider && (!publicUrl || isPrivateHost(new URL(publicUrl).hostname))) {
    findings.push({
      key: 'server.public_url',
      problem: `${publicUrl ? `(${publicUrl}) is a loopback or private address` : 'is not set (receipt URLs would point at 127.0.0.1)'} while provider ${realProvider} must reach it with receipts`,
      severity: 'refuse',
    });
  }
  findings.push(...findDefaultedSettings(config));
  findings.push(...findClearTextSettings(config));
  return findings;
}

/**
 * Keys production must have written out: a misspelt DATABASE_URL would start an empty SQLite ledger beside the real
 * one, and an unset CRM_WEBHOOK_URL would post conversions to the shipped config's 127.0.0.1:9090.
 */
const KEYS_WITHOUT_DEFAULT = ['database.url', 'crm.webhook_url'] as const;

function findDefaultedSettings(config: Readonly<Config>): Finding[] {
  const defaulted = defaultedKeys(config);
  return KEYS_WITHOUT_DEFAULT.flatMap((key) => {
    const source = defaulted.get(key);
    return source ? [{ key, problem: `comes from ${source}: production takes it only when set`, severity: 'refuse' as const }] : [];
  });
}

/** A URL whose traffic crosses the network unencrypted: plain http (or amqp) to a host that is not this machine. */
function inClearText(url: string | undefined): boolean {
  if (!url) return false;
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'amqp:') return false;
  return !isLoopbackHost(parsed.hostname);
}

/** The `warn` findings: the CRM's keys and players' data in clear text, /metrics without a key, SMPP without TLS. */
function findClearTextSettings(config: Readonly<Config>): Finding[] {
  const findings: Finding[] = [];
  const warn = (key: string, problem: string) => findings.push({ key, problem, severity: 'warn' });
  const { crm } = config;
  if (inClearText(crm.webhook_url))
    warn('crm.webhook_url', `(${crm.webhook_url}) is plain http: conversions and crm.webhook_api_key cross the network unencrypted`);
  if (inClearText(crm.integration.url))
    warn('crm.integration.url', `(${crm.integration.url}) is plain http: players' events and the CRM's headers cross the network unencrypted`);
  if (crm.integration.transport === 'rabbitmq' && inClearText(crm.integration.rabbitmq?.url)) {
    warn('crm.integration.rabbitmq.url', "is plain amqp://: players' events and the broker password cross the network unencrypted (amqps:// encrypts them)");
  }
  if (config.metrics.public) warn('metrics.public', 'is on: /metrics answers anyone who can reach the port, without admin.api_key');
  for (const [name, provider] of Object.entries(config.providers)) {
    if (provider.type === 'smpp' && provider.tls === false) {
      warn(`providers.${name}.tls`, 'is off: the SMPP password, every message and every receipt cross the network in plain TCP');
    }
  }
  return findings;
}

export function describeFinding(f: Finding): string {
  return `${f.key} ${f.problem}`;
}
