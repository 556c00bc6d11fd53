import { describe, expect, it } from 'vitest';
import { isLedgerUnavailable, isRefusedValue, isUniqueViolation } from '../../src/ledger/engine/write-errors.js';

const err = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('classifying a failed ledger write', () => {
  it.each([
    ['SQLite busy', err('SQLITE_BUSY'), true, false],
    ['SQLite disk I/O', err('SQLITE_IOERR_WRITE'), true, false],
    ['SQLite disk full', err('SQLITE_FULL'), true, false],
    ['PostgreSQL connection failure', err('08006'), true, false],
    ['PostgreSQL admin shutdown', err('57P01'), true, false],
    ['socket refused', err('ECONNREFUSED'), true, false],
    ['pool connection terminated', new Error('Connection terminated unexpectedly'), true, false],
    ['PostgreSQL NUL in text', err('22021'), false, true],
    ['PostgreSQL value too long', err('22001'), false, true],
    ['PostgreSQL index row too large (an 8 KB user_id)', err('54000'), false, true],
    ['SQLite value too big', err('SQLITE_TOOBIG'), false, true],
    ['a trigger refusing the row', err('SQLITE_CONSTRAINT_TRIGGER'), false, false],
    ['a unique violation', err('23505'), false, false],
    ['a bug (TypeError)', new TypeError('Cannot read properties of undefined'), false, false],
    ['not an error at all', 'boom', false, false],
  ])('%s: unavailable %s, refused value %s', (_label, error, unavailable, refused) => {
    expect(isLedgerUnavailable(error)).toBe(unavailable);
    expect(isRefusedValue(error)).toBe(refused);
  });
});

describe('isUniqueViolation', () => {
  it.each([
    ['PostgreSQL unique violation', err('23505'), true],
    ['SQLite unique constraint', err('SQLITE_CONSTRAINT_UNIQUE'), true],
    ['SQLite primary key', err('SQLITE_CONSTRAINT_PRIMARYKEY'), true],
    ['PostgreSQL foreign key violation', err('23503'), false],
    ['SQLite check constraint', err('SQLITE_CONSTRAINT_CHECK'), false],
    ['SQLite busy', err('SQLITE_BUSY'), false],
    ['not an error at all', 'boom', false],
  ])('%s: %s', (_label, error, unique) => {
    expect(isUniqueViolation(error)).toBe(unique);
  });
});
