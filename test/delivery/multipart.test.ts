import { describe, expect, it } from 'vitest';
import { aggregatePartStatuses } from '../../src/delivery/parts.js';
import type { MappedStatus } from '../../providers/types.js';

describe('aggregatePartStatuses (docs/providers.md §4.2)', () => {
  it.each<[string, MappedStatus[], number, MappedStatus]>([
    ['a single delivered part', ['delivered'], 1, 'delivered'],
    ['every part delivered', ['delivered', 'delivered', 'delivered'], 3, 'delivered'],
    ['some parts have no receipt yet', ['delivered', 'delivered'], 3, 'intermediate'],
    ['no receipt at all', [], 2, 'intermediate'],
    ['only intermediate receipts', ['intermediate', 'intermediate'], 2, 'intermediate'],
    ['one part failed while others are pending', ['failed'], 3, 'failed'],
    ['one part failed, another delivered', ['delivered', 'failed', 'delivered'], 3, 'failed'],
    ['failed wins over undelivered', ['undelivered', 'failed'], 2, 'failed'],
    ['one part undelivered while others are pending', ['undelivered', 'intermediate'], 3, 'undelivered'],
    ['undelivered wins over unknown', ['delivery_unknown', 'undelivered'], 2, 'undelivered'],
    ['unknown with every part final', ['delivered', 'delivery_unknown'], 2, 'delivery_unknown'],
    ['unknown waits while a part could still fail', ['delivery_unknown', 'intermediate'], 2, 'intermediate'],
    ['more statuses than the submit listed count as parts', ['delivered', 'delivered', 'intermediate'], 2, 'intermediate'],
    ['a part count of zero is treated as one part', ['delivered'], 0, 'delivered'],
  ])('%s → %s', (_label, statuses, parts, expected) => {
    expect(aggregatePartStatuses(statuses, parts)).toBe(expected);
  });
});
