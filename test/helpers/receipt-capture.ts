/**
 * Stands in for the gateway's /dlr/{name} route at the plugin level: records what a fake posts (or GETs) and turns
 * it into the IncomingReceipt a plugin sees, with the public URL built from this server's base, never from Host.
 */
import type { IncomingReceipt } from '../../providers/types.js';
import { readBody, startFakeServer } from '../fakes/http.js';

export interface ReceiptCapture {
  /** Base URL to build callback URLs on (plays server.public_url). */
  url: string;
  receipts: IncomingReceipt[];
  close(): Promise<void>;
}

/** `answer`: the HTTP status for every request, or a function of the request's number (0-based) that picks it. */
export async function startReceiptCapture(answer: number | ((n: number) => number) = 200): Promise<ReceiptCapture> {
  const receipts: IncomingReceipt[] = [];
  const server = await startFakeServer(async (req, res) => {
    const rawBody = await readBody(req);
    const target = new URL(req.url ?? '/', 'http://placeholder');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    receipts.push({
      method: req.method ?? 'GET',
      publicUrl: capture.url + target.pathname + target.search,
      query: Object.fromEntries(target.searchParams),
      headers,
      contentType: headers['content-type'] ?? '',
      rawBody,
    });
    res.writeHead(typeof answer === 'number' ? answer : answer(receipts.length - 1)).end();
  });
  const capture: ReceiptCapture = { url: server.url, receipts, close: () => server.close() };
  return capture;
}
