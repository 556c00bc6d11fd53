import { describe, expect, it } from 'vitest';
import { receiptDedupKey, type ReceiptInput } from '../../src/delivery/apply-receipts.js';

const SMS_ID = '01a21da1-5b03-7c86-8b58-a3e6d412bc1f';
const OTHER = '01a21f2b-6d84-7087-8420-55c974a27319';

function input(event: Partial<ReceiptInput['event']>): ReceiptInput {
  return { provider: 'smsc', event: { providerStatus: 'DELIVRD', status: 'delivered', ...event } };
}

describe('receiptDedupKey', () => {
  it.each([
    ['named and matched by our sms_id', input({ smsId: SMS_ID, providerMessageId: 'P1' }), SMS_ID, `smsc|${SMS_ID}|P1|DELIVRD|`],
    ['found by the provider id alone: the message clock', input({ providerMessageId: 'P1', errorCode: '000' }), SMS_ID, 'smsc|01a21da15b03|P1|DELIVRD|000'],
    ['naming another message than the one found', input({ smsId: OTHER, providerMessageId: 'P1' }), SMS_ID, 'smsc|01a21da15b03|P1|DELIVRD|'],
    ['parked, naming our sms_id', input({ smsId: SMS_ID }), undefined, `smsc|${SMS_ID}||DELIVRD|`],
    ['parked, with the provider id alone', input({ providerMessageId: 'P1' }), undefined, 'smsc||P1|DELIVRD|'],
  ])('%s', (_label, receipt, matched, key) => {
    expect(receiptDedupKey(receipt, matched)).toBe(key);
  });

  it("orders matched receipts' keys by their messages' time, whatever the provider's ids", () => {
    const keys = [
      receiptDedupKey(input({ providerMessageId: 'FFFF' }), SMS_ID),
      receiptDedupKey(input({ providerMessageId: '0000' }), OTHER),
      receiptDedupKey(input({ providerMessageId: '8888' }), SMS_ID),
    ];
    expect([...keys].sort()).toEqual([keys[2], keys[0], keys[1]]);
  });
});
