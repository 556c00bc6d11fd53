/**
 * How many rows (or ids) one statement carries when the ledger writes or looks up many at once. Both stay well under
 * SQLite's and PostgreSQL's limits on bound parameters (a row binds up to a dozen values, an id one), and keep each
 * statement's text, and its prepared-statement cache entry, small.
 */
export const ROWS_PER_STATEMENT = 200;
export const IDS_PER_STATEMENT = 500;

/** The largest power of two not above `n` (n ≥ 1). */
function floorPowerOfTwo(n: number): number {
  return 2 ** Math.floor(Math.log2(n));
}

/**
 * `n` rows as [start, end) pieces whose sizes are powers of two, largest first, none above ROWS_PER_STATEMENT: 37
 * rows are written as 32, 4 and 1. The SQLite driver caches prepared statements by their text
 * (src/ledger/db.ts), and a multi-row statement's text depends on its row count: a group of any size then needs
 * one of 8 texts instead of one of 200, so the cache keeps them all rather than preparing again and again.
 */
export function rowPieces(n: number): Array<[number, number]> {
  const pieces: Array<[number, number]> = [];
  for (let start = 0; start < n; ) {
    const size = floorPowerOfTwo(Math.min(n - start, ROWS_PER_STATEMENT));
    pieces.push([start, start + size]);
    start += size;
  }
  return pieces;
}

/**
 * Ids for `where … in (…)`, in chunks of at most IDS_PER_STATEMENT, each padded to a power of two by repeating its
 * last id (a set membership test is the same with a repeat): few statement texts, as rowPieces, without extra
 * statements.
 */
export function idChunks<T>(ids: readonly T[]): T[][] {
  const chunks: T[][] = [];
  const max = floorPowerOfTwo(IDS_PER_STATEMENT);
  for (let i = 0; i < ids.length; i += max) {
    const chunk = ids.slice(i, i + max);
    const padded = 2 ** Math.ceil(Math.log2(chunk.length));
    while (chunk.length < padded) chunk.push(chunk[chunk.length - 1]!);
    chunks.push(chunk);
  }
  return chunks;
}
