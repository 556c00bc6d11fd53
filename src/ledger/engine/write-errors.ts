/**
 * Which ledger write failures are about the database and which about the rows written: the first kind fails
 * everyone waiting (retrying row by row would only wait again), the second only the row that caused it.
 */

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/**
 * SQLite's result codes for a busy, locked, full, read-only or broken database file (sqlite.org "Result and Error
 * Codes"); PostgreSQL's SQLSTATE classes 08 (connection), 53 (insufficient resources), 57 (operator intervention)
 * and 58 (system error); and Node's system errors (ECONNREFUSED, ETIMEDOUT …) from the pool's socket.
 */
export function isLedgerUnavailable(error: unknown): boolean {
  const code = codeOf(error);
  if (/^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|CORRUPT|NOMEM|NOTADB|PROTOCOL)/.test(code)) return true;
  if (/^(08|53|57|58)[0-9A-Z]{3}$/.test(code)) return true;
  if (/^E[A-Z]{3,}$/.test(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|database connection is not open/i.test(message);
}

/**
 * The row itself cannot be stored as given: PostgreSQL's class 22 (data exception: a NUL character, an invalid
 * byte sequence, a value too long), its 54000 (a value too large for an index entry, e.g. a text of several
 * kilobytes in an indexed column) and SQLite's TOOBIG and MISMATCH. Such a row is the caller's input at fault, so
 * it is answered 400 (`failed` in a batch): a 503 would have the CRM retry it forever (docs/public-doors.md).
 */
export function isRefusedValue(error: unknown): boolean {
  const code = codeOf(error);
  return /^22[0-9A-Z]{3}$/.test(code) || code === '54000' || code === 'SQLITE_TOOBIG' || code === 'SQLITE_MISMATCH';
}

/** A unique key already held by another row: PostgreSQL's 23505, SQLite's CONSTRAINT_UNIQUE (and PRIMARYKEY). */
export function isUniqueViolation(error: unknown): boolean {
  const code = codeOf(error);
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
