/**
 * How many rows (or ids) one statement carries when the ledger writes or looks up many at once. Both stay well under
 * SQLite's and PostgreSQL's limits on bound parameters (a row binds up to a dozen values, an id one), and keep each
 * statement's text, and its prepared-statement cache entry, small.
 */
export const ROWS_PER_STATEMENT = 200;
export const IDS_PER_STATEMENT = 500;
