/**
 * A fake operator platform: a real HTTP server speaking the operator API (the same paths the CRM calls), for the
 * http backend. It answers from its own data, records every request, and can be told to misbehave for the next
 * call to a path: malformed JSON, a wrong shape, an error status, a slow answer, or a reconciliation stream that
 * breaks off or ends with an error.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Scripted {
  status?: number;
  /** Sent as is (a string) or as JSON. */
  body?: unknown;
  delayMs?: number;
}

export interface ReconciliationScript {
  users: string[];
  /** Ids per written chunk. */
  chunk?: number;
  /** After this many ids: `error` closes the JSON with an error field, `cut` destroys the connection. */
  failAfter?: { ids: number; how: 'error' | 'cut' };
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface FakeOperatorPlatform {
  url: string;
  requests: RecordedRequest[];
  users: Map<string, Record<string, unknown>>;
  consents: Map<string, Array<{ opted_in: boolean; type: string; products?: string[] }>>;
  /** The next call to `path` gets this answer instead of the normal one. */
  script(path: string, answer: Scripted): void;
  reconciliation: ReconciliationScript;
  close(): Promise<void>;
}

export async function startFakeOperatorPlatform(): Promise<FakeOperatorPlatform> {
  const scripted = new Map<string, Scripted[]>();
  const fake = {
    requests: [] as RecordedRequest[],
    users: new Map<string, Record<string, unknown>>(),
    consents: new Map<string, Array<{ opted_in: boolean; type: string; products?: string[] }>>(),
    reconciliation: { users: [] } as ReconciliationScript,
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };

  function normal(method: string, path: string, body: string): { status: number; body: unknown } {
    const [, area, id] = /^\/(userdetails|userconsents|userblocks)\/(.+)$/.exec(path) ?? [];
    const userId = id ? decodeURIComponent(id) : '';
    if (area && !fake.users.has(userId)) return { status: 404, body: { error: 'User not found' } };
    if (area === 'userdetails') return { status: 200, body: fake.users.get(userId) };
    if (area === 'userblocks') {
      const u = fake.users.get(userId)!;
      return {
        status: 200,
        body: {
          blocks: [
            { active: u.is_blocked, type: 'Blocked', note: '' },
            { active: u.is_excluded, type: 'Excluded', note: '' },
          ],
        },
      };
    }
    if (area === 'userconsents' && method === 'GET') return { status: 200, body: { consents: fake.consents.get(userId) ?? [] } };
    if (area === 'userconsents') {
      type Entry = { opted_in: boolean; type: string; products?: string[] };
      // The UK variant sends one {channel, opted_in, products} instead of a list.
      const sent = (JSON.parse(body) as { consents: Entry[] | { channel: string; opted_in: boolean; products?: string[] } }).consents;
      const changes: Entry[] = Array.isArray(sent) ? sent : [{ type: sent.channel, opted_in: sent.opted_in, products: sent.products }];
      const current = fake.consents.get(userId) ?? [];
      fake.consents.set(userId, [...current.filter((c) => !changes.some((n) => n.type === c.type)), ...changes]);
      return { status: 200, body: { data: 'Success' } };
    }
    if (path === '/bonus/list') return { status: 200, body: { Data: [{ text: 'FS: Free spins', value: 'FS' }], Success: true, Errors: [] } };
    if (path === '/bonus/credit' || path === '/bonus/credit/funds') {
      const userId = (JSON.parse(body) as { user_id?: string }).user_id ?? '';
      return fake.users.has(userId)
        ? { status: 200, body: { Success: true, Errors: [] } }
        : { status: 404, body: { Success: false, Errors: ['User not found'] } };
    }
    // The operator's wallet endpoint for the sql backend's credits outbox (operator.credits.url): takes every push.
    if (path === '/wallet/credits') return { status: 200, body: {} };
    return { status: 404, body: { error: `fake platform: no route ${method} ${path}` } };
  }

  async function streamReconciliation(res: ServerResponse) {
    const { users, chunk = 1000, failAfter } = fake.reconciliation;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"note":{"nested":[1,{"a":"]"}]},"users":[');
    for (let i = 0; i < users.length; i += chunk) {
      if (failAfter && i >= failAfter.ids) {
        // Cut only once the ids so far have had time to travel: a connection reset discards data still buffered.
        if (failAfter.how === 'cut') return void setTimeout(() => res.destroy(), 100);
        return void res.end('],"error":"timeout"}');
      }
      const part = users
        .slice(i, i + chunk)
        .map((u) => JSON.stringify(u))
        .join(',');
      if (!res.write((i === 0 ? '' : ',') + part)) await once(res, 'drain');
    }
    res.end('],"timestamp":"2026-11-23T10:00:00Z"}');
  }

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    // The platform's API lives under a path prefix, as operator.base_url may carry one (docs/crm-interface.md §6).
    const path = (req.url ?? '/').split('?')[0]!.replace(/^\/op-api/, '');
    fake.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    const next = scripted.get(path)?.shift();
    if (next) {
      if (next.delayMs) await new Promise((r) => setTimeout(r, next.delayMs));
      if (!res.destroyed) send(res, next.status ?? 200, next.body ?? '');
      return;
    }
    if (path === '/reconciliation' || path === '/reconciliation/products') return void (await streamReconciliation(res));
    const answer = normal(req.method ?? 'GET', path, body);
    send(res, answer.status, answer.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}/op-api`,
    script(path: string, answer: Scripted) {
      scripted.set(path, [...(scripted.get(path) ?? []), answer]);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
