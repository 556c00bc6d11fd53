import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { compactHeap } from '../../src/kit/heap.js';

const MiB = 1024 * 1024;
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!;

describe('compactHeap', () => {
  it('frees what nothing references any more and gives the young generation back', () => {
    // ~30 MB of objects, held long enough to leave the young generation, then dropped: no collection has run since.
    let garbage: Array<{ i: number; text: string }> | undefined = Array.from({ length: 300_000 }, (_, i) => ({ i, text: `item ${i}` }));
    for (let round = 0; round < 5; round++) garbage = garbage.map((g) => ({ ...g }));
    const held = garbage.length;
    garbage = undefined;
    const before = getHeapStatistics().used_heap_size;
    const youngBefore = newSpace().physical_space_size;

    const pauseMs = compactHeap();

    expect(held).toBe(300_000);
    expect(pauseMs).toBeGreaterThan(0);
    expect(before - getHeapStatistics().used_heap_size).toBeGreaterThan(10 * MiB);
    expect(newSpace().physical_space_size).toBeLessThanOrEqual(Math.min(youngBefore, 2 * MiB));
  });

  it('leaves no gc function in the caller’s global scope', () => {
    compactHeap();
    expect('gc' in globalThis).toBe(false);
  });
});
