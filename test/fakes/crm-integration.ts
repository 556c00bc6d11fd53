/**
 * A fake of the CRM's Integration API (docs/crm-interface.md §7): a real HTTP server that records every event request
 * (method, path, headers, body) in arrival order, answers 200, and can refuse the next N requests, answer slowly,
 * or go down (port closed) and come back on the same port.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, sendJson, startFakeServer, type FakeServer } from './http.js';

export interface IntegrationRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** The gateway's event id (Idempotency-Key header). */
  eventId: string;
  at: number;
}

export class FakeIntegrationApi {
  /** Requests the fake answered 200, in arrival order. */
  readonly accepted: IntegrationRequest[] = [];
  /** Requests it refused (failNext). */
  refusedCount = 0;
  /** Requests that arrived (answered or not yet). */
  arrivedCount = 0;
  private failures: number[] = [];
  private server: FakeServer | undefined;
  private port = 0;
  delayMs = 0;

  constructor(private readonly requiredHeaders: Record<string, string> = {}) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  failNext(count: number, status = 503): void {
    this.failures.push(...Array<number>(count).fill(status));
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
    const failure = this.failures.shift();
    if (failure) {
      this.refusedCount++;
      return sendJson(res, failure, { error: 'simulated failure' });
    }
    this.accepted.push({ method: req.method!, path: req.url!, headers: req.headers, body: JSON.parse(raw), eventId: String(req.headers['idempotency-key']), at: Date.now() });
    sendJson(res, 200, { message: 'ok' });
  }
}
