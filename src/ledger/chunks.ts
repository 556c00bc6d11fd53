/**
 * How many rows (or ids) one statement carries when the ledger writes or looks up many at once. Both stay well under
 * SQLite's and PostgreSQL's limits on bound parameters (a row binds up to a dozen values, an id one), and keep each
 * statement's text, and its prepared-statement cache entry, small.
 */
export const ROWS_PER_STATEMENT = 200;
export const IDS_PER_STATEMENT = 500;

/**
 * The row counts a statement is given, about 1.5× apart. A statement's text, its query template (query-template.ts)
 * and its prepared statement (engine/sqlite.ts) exist once per row count: were every count from 1 to 200 used, a long-running
 * gateway would keep about 200 shapes of each hot statement. With these a group of any size needs at most a few
 * statements, and each statement has at most 17 shapes.
 */
const LADDER = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384];

/** Rows split into statements of `max` rows, the rest in the largest ladder sizes that fit (rows are never repeated). */
export function statementChunks<T>(rows: readonly T[], max: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < rows.length; ) {
    const left = rows.length - i;
    let size = max;
    if (left < max) {
      size = 1;
      for (const step of LADDER) if (step <= left) size = step;
    }
    chunks.push(rows.slice(i, i + size));
    i += size;
  }
  return chunks;
}

/**
 * Ids for `IN (…)` lists: `max` at a time, the last list filled up to the next ladder size by repeating its last id.
 * A repeated id in an IN list selects or updates nothing more, so every list takes one statement.
 */
export function idChunks<T>(ids: readonly T[], max: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < ids.length; i += max) {
    const chunk = ids.slice(i, i + max);
    const size = chunk.length === max ? max : Math.min(max, LADDER.find((step) => step >= chunk.length) ?? max);
    while (chunk.length < size) chunk.push(chunk[chunk.length - 1]!);
    chunks.push(chunk);
  }
  return chunks;
}
