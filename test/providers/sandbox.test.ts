import { afterEach, describe, expect, it } from 'vitest';
import type { SmsProvider } from '../../providers/types.js';
import { createPlugin, noAbort, sendRequest } from '../helpers/providers.js';
import { startReceiptCapture, type ReceiptCapture } from '../helpers/receipt-capture.js';

describe('sandbox receipts', () => {
  let capture: ReceiptCapture | undefined;
  let provider: SmsProvider | undefined;
  afterEach(async () => {
    await provider?.close?.();
    await capture?.close();
  });

  it.each([
    { receipts: true, posted: 3 },
    { receipts: false, posted: 0 },
  ])('receipts: $receipts posts $posted of three sends’ receipts, held until close() flushes them', async ({ receipts, posted }) => {
    capture = await startReceiptCapture();
    provider = createPlugin('sandbox', { dlr_delay_ms: 3_600_000, receipt_secret: 'sandbox-secret', receipts });
    for (const to of ['+447700900123', '+447700900124', '+447700900125']) {
      expect(await provider.send(sendRequest(capture.url, 'sandbox', { to }), noAbort())).toMatchObject({ ok: true });
    }
    expect(capture.receipts).toHaveLength(0);
    // close() posts what is due and waits for the posts.
    await provider.close?.();
    const events = capture.receipts.flatMap((r) => JSON.parse(r.rawBody.toString()) as unknown[]);
    expect(events).toHaveLength(posted);
  });
});
