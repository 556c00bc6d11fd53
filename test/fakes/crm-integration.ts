/**
 * A fake of the CRM's Integration API (docs/crm-interface.md §7): a real HTTP server that records every event request
 * (method, path, headers, body) in arrival order, answers 200 (or `okStatus`), and can refuse the next N requests
 * (any status, body and Retry-After), refuse every request matching a rule, answer slowly, or go down (port closed)
 * and come back on the same port. `arrivals` records every request, taken or not.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson, startFakeServer, type FakeServer } from './http.js';

export interface IntegrationRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The body's text as it arrived. */
  raw: string;
  /** The gateway's event id (Idempotency-Key header). */
  eventId: string;
  at: number;
}

export interface Refusal {
  status: number;
  body?: unknown;
  retryAfter?: string;
}

export class FakeIntegrationApi {
  /** Requests the fake answered 200, in arrival order. */
  readonly accepted: IntegrationRequest[] = [];
  /** Requests it refused (failNext). */
  refusedCount = 0;
  /** Requests that arrived (answered or not yet). */
  arrivedCount = 0;
  /** Every request that arrived, taken or refused, in arrival order. */
  readonly arrivals: IntegrationRequest[] = [];
  /** The status a taken request is answered with. */
  okStatus = 200;
  /** Requests matching this are refused with its answer, every time. */
  refuseWhen: ((r: IntegrationRequest) => Refusal | undefined) | undefined;
  private failures: Refusal[] = [];
  private server: FakeServer | undefined;
  private port = 0;
  delayMs = 0;

  constructor(private readonly requiredHeaders: Record<string, string> = {}) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  failNext(count: number, status = 503, answer: Omit<Refusal, 'status'> = {}): void {
    for (let i = 0; i < count; i++) this.failures.push({ status, ...answer });
  }

  /** Accepted requests for one user, in arrival order. */
  forUser(userId: string): IntegrationRequest[] {
    return this.accepted.filter((r) => r.body?.user_id === userId);
  }

  async start(): Promise<this> {
    this.server = await startFakeServer((req, res) => this.handle(req, res), this.port);
    this.port = Number(new URL(this.server.url).port);
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    this.arrivedCount++;
    for (const [name, value] of Object.entries(this.requiredHeaders)) {
      if (req.headers[name.toLowerCase()] !== value) return sendJson(res, 401, { error: `${name} missing or wrong` });
    }
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const request = {
      method: req.method!,
      path: req.url!,
      headers: req.headers,
      body: JSON.parse(raw),
      raw,
      eventId: String(req.headers['idempotency-key']),
      at: Date.now(),
    };
    this.arrivals.push(request);
    const failure = this.refuseWhen?.(request) ?? this.failures.shift();
    if (failure) {
      this.refusedCount++;
      if (failure.retryAfter !== undefined) res.setHeader('retry-after', failure.retryAfter);
      return sendJson(res, failure.status, failure.body ?? { error: 'simulated failure' });
    }
    this.accepted.push(request);
    if (this.okStatus === 204) {
      res.writeHead(204).end();
      return;
    }
    sendJson(res, this.okStatus, { message: 'success' });
  }
}
