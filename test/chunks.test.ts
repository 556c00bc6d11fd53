import { describe, expect, it } from 'vitest';
import { idChunks, rowPieces, IDS_PER_STATEMENT, ROWS_PER_STATEMENT } from '../src/ledger/chunks.js';

describe('rowPieces', () => {
  it.each([
    [0, []],
    [1, [[0, 1]]],
    [37, [[0, 32], [32, 36], [36, 37]]],
    [128, [[0, 128]]],
    [300, [[0, 128], [128, 256], [256, 288], [288, 296], [296, 300]]],
  ])('%i rows → %j', (n, pieces) => {
    expect(rowPieces(n)).toEqual(pieces);
  });

  it('covers every row once, in order, in power-of-two pieces no bigger than ROWS_PER_STATEMENT', () => {
    for (let n = 0; n <= 1_000; n++) {
      const pieces = rowPieces(n);
      let next = 0;
      for (const [start, end] of pieces) {
        expect(start).toBe(next);
        const size = end - start;
        expect(size & (size - 1)).toBe(0);
        expect(size).toBeLessThanOrEqual(ROWS_PER_STATEMENT);
        next = end;
      }
      expect(next).toBe(n);
    }
  });
});

describe('idChunks', () => {
  it.each([
    [[], []],
    [['a'], [['a']]],
    [['a', 'b', 'c'], [['a', 'b', 'c', 'c']]],
    [['a', 'b', 'c', 'd'], [['a', 'b', 'c', 'd']]],
  ])('%j → %j', (ids, chunks) => {
    expect(idChunks(ids)).toEqual(chunks);
  });

  it('keeps every id, pads each chunk to a power of two with its own ids, none above IDS_PER_STATEMENT', () => {
    for (const n of [5, 255, 256, 257, 700, 1_000]) {
      const ids = Array.from({ length: n }, (_, i) => i);
      const chunks = idChunks(ids);
      expect(new Set(chunks.flat())).toEqual(new Set(ids));
      for (const chunk of chunks) {
        expect(chunk.length & (chunk.length - 1)).toBe(0);
        expect(chunk.length).toBeLessThanOrEqual(IDS_PER_STATEMENT);
      }
    }
  });
});
