/**
 * A fake CRM conversion webhook: a real HTTP server that records every POST {base}/sms/conversion, checks the
 * X-API-KEY, and can fail the next N requests or go down entirely (port closed) and come back on the same port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Conversion {
  activity: Record<string, unknown>;
  sms_id: string;
  delivery_status: string;
}

export class FakeCrm {
  readonly requests: Array<{ apiKey: string | undefined; idempotencyKey: string | undefined; rawBody: string; body: Conversion[]; traceparent?: string }> = [];
  /** Milliseconds between taking a post (recorded) and answering it: a sender killed meanwhile never hears the 200. */
  answerDelayMs = 0;
  private server: Server | undefined;
  private sockets = new Set<Socket>();
  private failures: Array<number> = [];
  port = 0;

  constructor(private readonly apiKey = 'test-webhook-key') {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every conversion received, in order (duplicates included: tests check there are none). */
  get conversions(): Conversion[] {
    return this.requests.flatMap((r) => r.body);
  }

  /** How many of the failures asked for with failNext are still to come. */
  get pendingFailures(): number {
    return this.failures.length;
  }

  /** Answers the next `count` requests with `status` instead of 200. */
  failNext(count: number, status = 503): void {
    this.failures.push(...Array<number>(count).fill(status));
  }

  /**
   * Answers 400 to every post holding a conversion of this activity.id, as a CRM that validates each conversion
   * refuses the whole request for one it cannot take. Refused posts are kept in `refused`.
   */
  refuseActivity(id: string | number): void {
    this.refusedIds.add(String(id));
  }

  readonly refused: Conversion[][] = [];
  private refusedIds = new Set<string>();

  /** Forgets recorded requests and pending failures (between tests). */
  reset(): void {
    this.requests.length = 0;
    this.refused.length = 0;
    this.failures = [];
    this.refusedIds.clear();
    this.answerDelayMs = 0;
  }

  async start(port = this.port): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Closes the port: posts fail with connection refused until start() again. */
  async stop(): Promise<void> {
    if (!this.server) return;
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/sms/conversion') return answer(404, { error: 'not found' });
    if (req.headers['x-api-key'] !== this.apiKey) return answer(401, { error: 'bad key' });
    const failure = this.failures.shift();
    if (failure) return answer(failure, { error: 'simulated failure' });
    const body = JSON.parse(rawBody) as Conversion[];
    if (!Array.isArray(body)) return answer(400, { error: 'expected an array' });
    const poison = body.find((c) => this.refusedIds.has(String(c.activity?.id)));
    if (poison) {
      this.refused.push(body);
      return answer(400, { error: `activity ${String(poison.activity.id)}: refused` });
    }
    this.requests.push({
      apiKey: req.headers['x-api-key'] as string,
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
      rawBody,
      body,
      ...(typeof req.headers.traceparent === 'string' ? { traceparent: req.headers.traceparent } : {}),
    });
    if (this.answerDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.answerDelayMs));
    answer(200, { message: 'success' });
  }
}
