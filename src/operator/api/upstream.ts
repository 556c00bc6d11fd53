/**
 * Pooled HTTP to the operator's platform (undici: docs/design.md §6 keeps SDK-style clients off hot paths). Answers values;
 * network failures and timeouts become BackendErrors so the routes can answer 502 or 504.
 */
import { Agent, errors, request, type Dispatcher } from 'undici';
import { BackendError } from '../backend.js';
import { parseExact, stringifyExact } from '../../http/exact-json.js';

export interface UpstreamOptions {
  baseUrl: string;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
  connections: number;
}

export interface UpstreamAnswer {
  status: number;
  /**
   * Parsed JSON, or undefined when the body was empty or not JSON. Its numbers a double would change are RawJson
   * (parseExact), so what is passed on to the CRM (a user record's `segmentation`) keeps every digit.
   */
  json: unknown;
  text: string;
}

/** Far above any user record; a bigger answer is a fault, not data. */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;

export interface Upstream {
  call(method: 'GET' | 'POST', path: string, body?: unknown, headers?: Record<string, string>): Promise<UpstreamAnswer>;
  /** For long answers read as a stream; the timeout applies to the headers and to each pause between chunks. */
  open(method: 'POST', path: string, body: unknown): Promise<Dispatcher.ResponseData>;
  close(): Promise<void>;
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const agent = new Agent({ connections: options.connections, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs });
  const base = options.baseUrl.replace(/\/+$/, '');

  function send(method: string, path: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal) {
    return request(base + path, {
      method: method as Dispatcher.HttpMethod,
      dispatcher: agent,
      signal,
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...options.headers,
        ...headers,
      },
      // The CRM's numbers as it wrote them: a body read with parseExact holds RawJson where a double would round.
      body: body === undefined ? undefined : stringifyExact(body),
    }).catch((error: unknown) => {
      throw toBackendError(error, method, path, options.timeoutMs);
    });
  }

  return {
    async call(method, path, body, headers = {}) {
      const signal = AbortSignal.timeout(options.timeoutMs);
      const res = await send(method, path, body, headers, signal);
      let text = '';
      try {
        for await (const chunk of res.body) {
          text += (chunk as Buffer).toString('utf8');
          if (text.length > MAX_ANSWER_BYTES) {
            res.body.destroy();
            throw new BackendError('bad_upstream', `operator platform: ${method} ${path} answered more than ${MAX_ANSWER_BYTES} bytes`);
          }
        }
      } catch (error) {
        throw error instanceof BackendError ? error : toBackendError(error, method, path, options.timeoutMs);
      }
      return { status: res.statusCode, json: readAnswerJson(text), text };
    },
    open: (method, path, body) => send(method, path, body, {}),
    close: () => agent.close(),
  };
}

/** The platform's answer as JSON read by parseExact, or undefined when it is empty or not JSON (the error shows the text). */
function readAnswerJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return parseExact(text);
  } catch {
    return undefined;
  }
}

export function toBackendError(error: unknown, method: string, path: string, timeoutMs: number): BackendError {
  const timedOut =
    error instanceof errors.HeadersTimeoutError ||
    error instanceof errors.BodyTimeoutError ||
    (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'));
  if (timedOut) return new BackendError('timeout', `operator platform: ${method} ${path} did not answer within ${timeoutMs} ms`);
  const reason = error instanceof Error ? ((error as { code?: string }).code ?? error.message) : String(error);
  return new BackendError('bad_upstream', `operator platform: ${method} ${path} failed (${reason})`);
}
