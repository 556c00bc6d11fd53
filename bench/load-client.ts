/**
 * The bench's load generator: keep-alive HTTP/1.1 connections, one request in flight on each (as the CRM sends),
 * requests written as one buffer and answers read by Content-Length. A general client (undici) costs ~200 µs of
 * CPU per small request on this machine, as much as the gateway itself; on 2 cores that would measure the client.
 * This one costs a fraction of that (`client_cpu_us_per_msg` in run.ts's output shows it).
 */
import { connect, type Socket } from 'node:net';

export interface LoadResponse {
  status: number;
  body: string;
}

interface Waiting {
  head: Buffer;
  body: Buffer;
  resolve: (response: LoadResponse) => void;
  reject: (error: Error) => void;
}

const HEADER_END = Buffer.from('\r\n\r\n');

class Connection {
  private socket: Socket | undefined;
  private pending: Buffer = Buffer.alloc(0);
  private current: Waiting | undefined;

  /** `onFree` is called after each answer (or failure), when the connection can take the next request. */
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly onFree: (c: Connection) => void,
  ) {}

  send(request: Waiting): void {
    this.current = request;
    const socket = (this.socket ??= this.open());
    socket.write(Buffer.concat([request.head, request.body]));
  }

  close(): void {
    this.socket?.destroy();
  }

  private open(): Socket {
    const socket = connect(this.port, this.host);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    const fail = (error: Error) => {
      this.socket = undefined;
      this.pending = Buffer.alloc(0);
      const current = this.current;
      this.current = undefined;
      if (current) {
        current.reject(error);
        this.onFree(this);
      }
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed by the server')));
    return socket;
  }

  private onData(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const headerEnd = this.pending.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = this.pending.toString('latin1', 0, headerEnd);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!length) {
      this.socket?.destroy(new Error(`answer without Content-Length: ${head.split('\r\n')[0]}`));
      return;
    }
    const end = headerEnd + 4 + Number(length[1]);
    if (this.pending.length < end) return;
    const body = this.pending.toString('utf8', headerEnd + 4, end);
    this.pending = this.pending.subarray(end);
    const current = this.current!;
    this.current = undefined;
    current.resolve({ status: Number(head.slice(9, 12)), body });
    this.onFree(this);
  }
}

/** Connections spread over one or more gateways (round robin, like a load balancer); requests wait for a free one. */
export class LoadClient {
  private readonly idle: Connection[];
  private readonly all: Connection[];
  private readonly queue: Waiting[] = [];

  constructor(
    urls: string[],
    connections: number,
    private readonly headers: Record<string, string>,
  ) {
    this.all = Array.from({ length: connections }, (_, i) => {
      const url = new URL(urls[i % urls.length]!);
      return new Connection(url.hostname, Number(url.port), (c) => this.release(c));
    });
    this.idle = [...this.all];
  }

  post(path: string, json: string): Promise<LoadResponse> {
    const body = Buffer.from(json, 'utf8');
    const lines = [`POST ${path} HTTP/1.1`, 'host: bench', `content-length: ${body.length}`];
    for (const [name, value] of Object.entries(this.headers)) lines.push(`${name}: ${value}`);
    const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    return new Promise<LoadResponse>((resolve, reject) => {
      const request: Waiting = { head, body, resolve, reject };
      const free = this.idle.pop();
      if (free) free.send(request);
      else this.queue.push(request);
    });
  }

  private release(connection: Connection): void {
    const next = this.queue.shift();
    if (next) connection.send(next);
    else this.idle.push(connection);
  }

  close(): void {
    for (const c of this.all) c.close();
  }
}
