/**
 * The pooled HTTP client provider plugins send with: one undici Pool per provider instance, keep-alive, no SDK on
 * the hot path (docs/design.md §6: a pooled request costs a tenth of the Twilio SDK's CPU per message).
 */
import { Pool } from 'undici';
import { sendFailure, type SendResult } from '../types.js';

export interface ProviderResponse {
  status: number;
  /** Parsed JSON body, or undefined when the body was not JSON. */
  json: unknown;
  text: string;
}

export interface ProviderPool {
  /**
   * `path` is appended to base_url's own path, so a base_url with a path prefix (a proxy) keeps working. With tracing
   * on, the undici instrumentation adds the W3C traceparent header (docs/tracing.md); plugins add nothing.
   */
  post(path: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<ProviderResponse>;
  /** A GET of `path` (with its query), for the lookups of `SmsProvider.lookup`. */
  get(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<ProviderResponse>;
  close(): Promise<void>;
}

/** An HTTP answer's body as JSON, or undefined when it is empty or not JSON (callers then show the text). */
export function parseJsonText(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function createProviderPool(baseUrl: string, connections: number): ProviderPool {
  const url = new URL(baseUrl);
  const prefix = url.pathname.replace(/\/+$/, '');
  const pool = new Pool(url.origin, {
    connections,
    keepAliveTimeout: 30_000,
    connectTimeout: 10_000,
  });
  return {
    async post(path, headers, body, signal) {
      const res = await pool.request({ method: 'POST', path: prefix + path, headers, body, signal });
      const text = await res.body.text();
      return { status: res.statusCode, json: parseJsonText(text), text };
    },
    async get(path, headers, signal) {
      const res = await pool.request({ method: 'GET', path: prefix + path, headers, signal });
      const text = await res.body.text();
      return { status: res.statusCode, json: parseJsonText(text), text };
    },
    close: () => pool.close(),
  };
}

/** A lookup's request that failed before any answer: the provider cannot tell now. */
export function lookupFailure(error: unknown): { answer: 'unknown'; reason: string } {
  const err = error as { code?: unknown; message?: unknown };
  return { answer: 'unknown', reason: `lookup failed: ${typeof err?.code === 'string' ? err.code : 'error'}: ${String(err?.message ?? error).slice(0, 200)}` };
}

/** Failures that happen before the request can have reached the provider: nothing was sent. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Describes a failure of the request itself (no HTTP answer). An abort means our timeout fired, possibly after
 * the provider received the request: the message may exist there (docs/providers.md §1.4 "timeout after the request
 * was sent"), and so may it after a connection reset; `ambiguous` says so. A refused connection sent nothing.
 */
export function describeRequestFailure(error: unknown, signal: AbortSignal): { network: string; error: string; ambiguous: boolean } {
  if (signal.aborted) return { network: 'timeout', error: 'no answer before the send timeout (the provider may still have accepted it)', ambiguous: true };
  const err = error as { code?: unknown; message?: unknown };
  const code = typeof err?.code === 'string' ? err.code : 'network_error';
  return { network: code, error: `connection failed (${code}): ${String(err?.message ?? error)}`, ambiguous: !NEVER_SENT.has(code) };
}

/**
 * The send prologue of the plugins that post one request per message (Twilio, Infobip, Sinch): the post, and a
 * request that got no HTTP answer described (describeRequestFailure) and classified by the plugin's own rule. Answers
 * the provider's response for the plugin to read, or the failed SendResult to return.
 */
export async function postMessage(
  send: { type: string; pool: ProviderPool; path: string; headers: Record<string, string>; body: string },
  signal: AbortSignal,
  classify: (failure: { network: string }) => 'permanent' | 'transient',
): Promise<{ ok: true; res: ProviderResponse } | { ok: false; result: SendResult }> {
  try {
    return { ok: true, res: await send.pool.post(send.path, send.headers, send.body, signal) };
  } catch (error) {
    const { network, error: detail, ambiguous } = describeRequestFailure(error, signal);
    return { ok: false, result: sendFailure(send.type, classify({ network }), detail, network, ambiguous) };
  }
}

/**
 * Whether an HTTP answer that is not a readable success may still have created the message: a 5xx, or a success we
 * cannot read, may have (docs/providers.md §1.4); a 4xx, 429 included, never did.
 */
export const mayHaveCreated = (status: number): boolean => status >= 500 || status < 300;
