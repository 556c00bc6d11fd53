/**
 * POST /reconciliation: `{"users":[…],"timestamp":"…"}`, or `{"error":"…"}` instead of those fields when the list
 * could not be read to the end (operator interface "POST /reconciliation": error comes instead of the normal
 * fields, so a CRM can never take a partial list for the whole one).
 * The ids are first spooled, page by page as they are read, to a temporary file; only when the last page has been
 * read does the answer start, streamed from that file. Memory stays flat however many users match (one page and
 * one file chunk at a time), and no byte of the list is sent before the list is known to be complete.
 *
 * Errors: an unknown field answers 501; one in reading the first page answers its status (statusOf); one after
 * that answers 200 `{"error": …, "code": 1001}`; the source's own error 200 `{"error": …, "code": 1002}` wherever it
 * comes; one while the spool is sent back ends the body as `…],"error": …, "code": 1001}`.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import type { Logger } from 'pino';
import { BackendError, ReconciliationListError, type IdPage, type OperatorBackend } from '../backend.js';
import { endOfLastWholeString } from './id-list-cut.js';
import { isReconciliationField, RECONCILIATION_FIELDS } from '../../crm/shapes.js';
import { productReconciliationRequestSchema, readBody, reconciliationRequestSchema } from '../requests.js';
import { statusOf } from './status.js';

/** Stable codes of a 200 `{"error", "code"}` (docs/operator-api.md "Error codes"). */
export const LIST_INCOMPLETE = 1001;
export const LIST_REPORTED_ERROR = 1002;

/** The fields POST /reconciliation/products takes: the consent ones (blocks and exclusions have no products). */
const PRODUCT_FIELDS = Object.keys(RECONCILIATION_FIELDS).filter((f) => f.startsWith('consent_'));

export function reconciliationHandler(backend: OperatorBackend, logger: Logger, { byProduct = false } = {}) {
  return async (c: Context) => {
    const parsed = byProduct ? await readBody(c, productReconciliationRequestSchema) : await readBody(c, reconciliationRequestSchema);
    if (!parsed.ok) return c.json({ error: parsed.error }, parsed.status);
    const { field } = parsed.value;
    const known = byProduct ? PRODUCT_FIELDS : Object.keys(RECONCILIATION_FIELDS);
    if (!isReconciliationField(field) || !known.includes(field)) {
      return c.json({ error: `field: "${field}" is not implemented (known: ${known.join(', ')})` }, 501);
    }

    const product = 'product' in parsed.value ? (parsed.value.product as string) : undefined;
    const run = backend.reconcile(field, product);
    const pages = run.pages[Symbol.asyncIterator]();
    let first: IteratorResult<IdPage>;
    try {
      first = await pages.next();
    } catch (error) {
      // The source's own 200 {"error"} is passed on as such, wherever it came (docs/operator-api.md "Reconciliation").
      if (error instanceof ReconciliationListError) return c.json({ error: error.message, code: LIST_REPORTED_ERROR }, 200);
      if (error instanceof BackendError) return c.json({ error: error.message }, statusOf(error.kind));
      throw error;
    }

    const spool = await createSpool();
    let count = 0;
    try {
      for (let next = first; !next.done; next = await pages.next()) {
        if (next.value.count === 0) continue;
        await spool.write((count === 0 ? '' : ',') + next.value.json);
        count += next.value.count;
      }
      await spool.finish();
    } catch (error) {
      await spool.discard();
      if (error instanceof ReconciliationListError) return c.json({ error: error.message, code: LIST_REPORTED_ERROR }, 200);
      const message = error instanceof BackendError ? error.message : 'the user list could not be read to the end; run the reconciliation again';
      logger.error({ err: error, field, users_read: count }, 'reconciliation failed; answering its error instead of a partial list');
      return c.json({ error: message, code: LIST_INCOMPLETE }, 200);
    }
    const timestamp = run.timestamp();

    c.header('Content-Type', 'application/json; charset=utf-8');
    c.header('Cache-Control', 'no-store');
    return stream(c, async (out) => {
      let aborted = false;
      out.onAbort(() => {
        aborted = true;
      });
      // Ids are sent only up to the end of a whole id, so a failure reading the spool back can still close the body
      // as valid JSON carrying `error` (id-list-cut.ts); the CRM reads `error` and drops the list.
      const decoder = new TextDecoder();
      let held = '';
      let opened = false;
      try {
        await out.write('{"users":[');
        opened = true;
        for await (const chunk of spool.read()) {
          if (aborted) return;
          const text = held + decoder.decode(chunk, { stream: true });
          const cut = endOfLastWholeString(text);
          held = text.slice(cut);
          if (cut > 0) await out.write(text.slice(0, cut));
        }
        await out.write(held + decoder.decode() + `],"timestamp":${JSON.stringify(timestamp)}}`);
      } catch (error) {
        logger.error({ err: error, field }, 'reconciliation answer failed while being sent; closing it with its error');
        if (opened && !aborted) {
          const message = 'the user list could not be sent to the end; run the reconciliation again';
          await out.write(`],"error":${JSON.stringify(message)},"code":${LIST_INCOMPLETE}}`).catch(() => {});
        }
      } finally {
        await spool.discard();
      }
    });
  };
}

/** A temporary file written in order, read back once, then removed (with its directory, private to this run). */
async function createSpool() {
  const dir = await mkdtemp(join(tmpdir(), 'gw-reconciliation-'));
  const path = join(dir, 'users.json');
  const file = await open(path, 'w', 0o600);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await file.close();
  };
  return {
    write: async (text: string) => void (await file.write(text)),
    finish: close,
    read: () => createReadStream(path, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>,
    async discard() {
      await close().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
