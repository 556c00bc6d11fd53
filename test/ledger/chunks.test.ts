import { describe, expect, it } from 'vitest';
import { idChunks, statementChunks } from '../../src/ledger/chunks.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('statementChunks', () => {
  it.each([
    [0, []],
    [1, [1]],
    [5, [4, 1]],
    [25, [24, 1]],
    [50, [48, 2]],
    [199, [192, 6, 1]],
    [200, [200]],
    [450, [200, 200, 48, 2]],
  ])('%i rows go in statements of %j, each row once and in order', (n, sizes) => {
    const chunks = statementChunks(range(n), 200);
    expect(chunks.map((c) => c.length)).toEqual(sizes);
    expect(chunks.flat()).toEqual(range(n));
  });

  it('uses few distinct statement sizes for every count up to the maximum', () => {
    const sizes = new Set<number>();
    for (let n = 1; n <= 200; n++) for (const c of statementChunks(range(n), 200)) sizes.add(c.length);
    expect(sizes.size).toBeLessThanOrEqual(16);
  });
});

describe('idChunks', () => {
  it.each([
    [0, []],
    [1, [1]],
    [5, [6]],
    [25, [32]],
    [300, [384]],
    [450, [500]],
    [501, [500, 1]],
    [1100, [500, 500, 128]],
  ])('%i ids go in lists of %j', (n, sizes) => {
    expect(idChunks(range(n), 500).map((c) => c.length)).toEqual(sizes);
  });

  it('fills a list with repeats of its own last id, keeping every id once before them', () => {
    const chunks = idChunks(['a', 'b', 'c', 'd', 'e'], 500);
    expect(chunks).toEqual([['a', 'b', 'c', 'd', 'e', 'e']]);
    const many = idChunks(range(505), 500);
    expect(many[0]).toEqual(range(500));
    expect(many[1]).toEqual([500, 501, 502, 503, 504, 504]);
  });
});
