/**
 * POST /reconciliation, streamed: `{"users":[` then each page of ids as it is read, then `],"timestamp":"…"}`.
 * Memory stays flat however many users match, because a page is written (and the client has taken it) before the
 * next one is read.
 *
 * Errors (operator-interface "POST /reconciliation"): an unknown field answers 501. An error before the first byte
 * answers a normal error status. An error after streaming began cannot change the 200 already sent, so the body is
 * closed as `{"users":[…ids so far…],"error":"…"}`: still parseable JSON, with `error` present and `timestamp`
 * absent, which tells the CRM the list is incomplete. The spec's "error instead of the normal fields" cannot be met
 * literally once ids have been sent; leaving out `timestamp` is the closest a streamed answer can come.
 */
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import type { Logger } from 'pino';
import { readJsonBody } from '../http/json-body.js';
import { BackendError, type IdPage, type OperatorBackend } from './backend.js';
import { isReconciliationField, RECONCILIATION_FIELDS } from './crm-shapes.js';
import { parseBody, reconciliationRequestSchema } from './requests.js';
import { statusOf } from './status.js';

export function reconciliationHandler(backend: OperatorBackend, logger: Logger) {
  return async (c: Context) => {
    const body = await readJsonBody(c);
    if (!body.ok) return c.json({ error: body.error }, body.status);
    const parsed = parseBody(reconciliationRequestSchema, body.value);
    if (!parsed.ok) return c.json({ error: parsed.error }, 400);
    const { field } = parsed.value;
    if (!isReconciliationField(field)) {
      return c.json({ error: `field: "${field}" is not implemented (known: ${Object.keys(RECONCILIATION_FIELDS).join(', ')})` }, 501);
    }

    const run = backend.reconcile(field);
    const pages = run.pages[Symbol.asyncIterator]();
    let first: IteratorResult<IdPage>;
    try {
      first = await pages.next();
    } catch (error) {
      if (error instanceof BackendError) return c.json({ error: error.message }, statusOf(error.kind));
      throw error;
    }

    c.header('Content-Type', 'application/json; charset=utf-8');
    c.header('Cache-Control', 'no-store');
    return stream(c, async (out) => {
      let aborted = false;
      out.onAbort(() => {
        aborted = true;
      });
      let count = 0;
      let next = first;
      try {
        await out.write('{"users":[');
        while (!next.done && !aborted) {
          const page = next.value;
          if (page.count > 0) {
            await out.write((count === 0 ? '' : ',') + page.json);
            count += page.count;
          }
          next = await pages.next();
        }
        if (aborted) return void (await pages.return?.(undefined));
        await out.write(`],"timestamp":${JSON.stringify(run.timestamp())}}`);
      } catch (error) {
        const message = error instanceof BackendError ? error.message : 'the user list could not be read to the end; run the reconciliation again';
        logger.error({ err: error, field, users_sent: count }, 'reconciliation failed while streaming');
        await out.write(`],"error":${JSON.stringify(message)}}`);
      }
    });
  };
}
