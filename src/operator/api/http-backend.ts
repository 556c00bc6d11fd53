/**
 * The `http` backend: each call goes to the operator's platform at operator.base_url, under the same paths the CRM
 * uses, with operator.headers. Every answer is checked against the shape the CRM validates (src/crm/shapes.ts) before
 * it is passed on, so a platform fault shows up as a 502 naming the field instead of a rejection inside the CRM.
 */
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../ledger/schema.js';
import { describeFirstIssue } from '../../http/zod-issue.js';
import { BackendError, ReconciliationListError, type BackendResult, type IdPage, type OperatorBackend, type ReconciliationRun } from '../backend.js';
import { crmHeadersOf } from '../../crm/references.js';
import { blocksRecordSchema, bonusListSchema, consentsRecordSchema, userRecordSchema, type ReconciliationField } from '../../crm/shapes.js';
import { createHttpCredits } from './http-credits.js';
import { toBackendError, type Upstream, type UpstreamAnswer } from './upstream.js';
import { UsersStreamParser } from './users-stream-parser.js';

export interface HttpBackendOptions {
  upstream: Upstream;
  db: Kysely<Database>;
  now: () => number;
  timeoutMs: number;
}

/** The platform's own words for an error, from the usual places, short enough for a log line. */
function upstreamMessage(answer: UpstreamAnswer): string {
  const json = answer.json as { error?: unknown; Errors?: unknown[] } | undefined;
  const message = typeof json?.error === 'string' ? json.error : typeof json?.Errors?.[0] === 'string' ? json.Errors[0] : answer.text;
  return (message as string).slice(0, 300) || '(empty body)';
}

function caught(error: unknown): { ok: false; kind: BackendError['kind']; error: string } {
  if (error instanceof BackendError) return { ok: false, kind: error.kind, error: error.message };
  throw error;
}

const path = (prefix: string, userId: string) => `${prefix}/${encodeURIComponent(userId)}`;

export function createHttpBackend({ upstream, db, now, timeoutMs }: HttpBackendOptions): OperatorBackend {
  async function read<S extends z.ZodType>(route: string, schema: S, what: string): Promise<BackendResult<z.output<S>>> {
    try {
      const answer = await upstream.call('GET', route);
      if (answer.status === 404) return { ok: false, kind: 'not_found', error: `operator platform: ${upstreamMessage(answer)}` };
      if (answer.status < 200 || answer.status > 299) {
        return { ok: false, kind: 'bad_upstream', error: `operator platform answered ${answer.status} to GET ${route}: ${upstreamMessage(answer)}` };
      }
      if (answer.json === undefined) return { ok: false, kind: 'bad_upstream', error: `operator platform answered GET ${route} with a body that is not JSON` };
      const parsed = schema.safeParse(answer.json);
      if (!parsed.success) {
        return { ok: false, kind: 'bad_upstream', error: `operator platform answered an invalid ${what}: ${describeFirstIssue(parsed.error, answer.json)}` };
      }
      return { ok: true, value: parsed.data };
    } catch (error) {
      return caught(error);
    }
  }

  /** 2xx: done. 404: unknown user. Other 4xx: the platform refuses this request (400). Anything else: 502. */
  async function write(route: string, body: unknown, headers: Record<string, string>): Promise<BackendResult<UpstreamAnswer>> {
    try {
      const answer = await upstream.call('POST', route, body, headers);
      if (answer.status >= 200 && answer.status <= 299) return { ok: true, value: answer };
      const message = `operator platform: ${upstreamMessage(answer)}`;
      if (answer.status === 404) return { ok: false, kind: 'not_found', error: message };
      if (answer.status >= 400 && answer.status <= 499) return { ok: false, kind: 'invalid', error: message };
      return { ok: false, kind: 'bad_upstream', error: `operator platform answered ${answer.status} to POST ${route}: ${upstreamMessage(answer)}` };
    } catch (error) {
      return caught(error);
    }
  }

  return {
    name: 'http',

    async userDetails(userId) {
      const result = await read(path('/userdetails', userId), userRecordSchema, 'user record');
      if (result.ok && result.value.user_id !== userId) {
        return {
          ok: false,
          kind: 'bad_upstream',
          error: `operator platform answered an invalid user record: user_id: is "${result.value.user_id}", asked for "${userId}"`,
        };
      }
      return result;
    },
    userConsents: (userId) => read(path('/userconsents', userId), consentsRecordSchema, 'consents record'),
    userBlocks: (userId) => read(path('/userblocks', userId), blocksRecordSchema, 'blocks record'),
    bonusList: () => read('/bonus/list', bonusListSchema, 'bonus list'),

    async updateConsents(userId, _changes, body) {
      const result = await write(path('/userconsents', userId), body, {});
      return result.ok ? { ok: true, value: undefined } : result;
    },

    credit: createHttpCredits({
      db,
      now,
      leaseMs: 2 * timeoutMs + 1_000,
      forward: (request) => write(request.kind === 'bonus' ? '/bonus/credit' : '/bonus/credit/funds', request.body, crmHeadersOf(request.refs)),
    }),

    reconcile: (field, product) => reconcileUpstream(upstream, field, product, now, timeoutMs),

    close: () => upstream.close(),
  };
}

/** Streams the platform's list through, checking its shape as it goes (constant memory whatever its length). */
function reconcileUpstream(
  upstream: Upstream,
  field: ReconciliationField,
  product: string | undefined,
  now: () => number,
  timeoutMs: number,
): ReconciliationRun {
  const route = product === undefined ? '/reconciliation' : '/reconciliation/products';
  let timestamp = new Date(now()).toISOString();
  const fail = (message: string) => new BackendError('bad_upstream', `operator platform answered an invalid reconciliation list: ${message}`);

  async function* pages(): AsyncGenerator<IdPage> {
    const res = await upstream.open('POST', route, product === undefined ? { field } : { field, product });
    if (res.statusCode < 200 || res.statusCode > 299) {
      const text = (await res.body.text().catch(() => '')).slice(0, 300);
      if (res.statusCode === 501) throw new BackendError('unsupported', `operator platform does not implement reconciliation field "${field}"`);
      throw new BackendError('bad_upstream', `operator platform answered ${res.statusCode} to POST ${route}: ${text || '(empty body)'}`);
    }
    const parser = new UsersStreamParser();
    const decoder = new TextDecoder();
    let complete = false;
    try {
      for await (const chunk of res.body) {
        const ids = parseOrFail(() => parser.push(decoder.decode(chunk as Buffer, { stream: true })), fail);
        if (ids.length > 0) yield { json: ids.map((id) => JSON.stringify(id)).join(','), count: ids.length };
      }
      complete = true;
    } catch (error) {
      throw error instanceof BackendError ? error : toBackendError(error, 'POST', route, timeoutMs);
    } finally {
      if (!complete) res.body.destroy();
    }
    const end = parseOrFail(() => (parser.push(decoder.decode()), parser.finish()), fail);
    if (end.error !== undefined) throw new ReconciliationListError(`operator platform: ${end.error}`);
    if (!z.iso.datetime({ offset: true }).safeParse(end.timestamp).success) throw fail('timestamp: must be an RFC 3339 timestamp');
    timestamp = end.timestamp!;
  }
  return { pages: pages(), timestamp: () => timestamp };
}

function parseOrFail<T>(step: () => T, fail: (message: string) => BackendError): T {
  try {
    return step();
  } catch (error) {
    throw fail((error as Error).message);
  }
}
