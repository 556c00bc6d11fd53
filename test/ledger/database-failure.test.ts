/** The one line for a ledger that cannot be opened or reached: the key, where it points (never the password), why. */
import { describe, expect, it } from 'vitest';
import { databaseTarget, describeDatabaseFailure } from '../../src/ledger/engine/database-failure.js';

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('databaseTarget', () => {
  it.each([
    ['postgres://gateway:s3cret@db.internal:6432/ledger', 'PostgreSQL at db.internal:6432/ledger'],
    ['postgresql://gateway@db.internal/ledger?sslmode=require', 'PostgreSQL at db.internal:5432/ledger'],
    ['postgres://gateway:pw@[fd00::5]/ledger', 'PostgreSQL at [fd00::5]:5432/ledger'],
    ['sqlite:./data/gateway.db', 'the SQLite file ./data/gateway.db'],
  ])('%s → %s', (url, target) => {
    expect(databaseTarget(url)).toBe(target);
  });
});

describe('describeDatabaseFailure', () => {
  const url = 'postgres://gateway:s3cret@db.internal:6432/ledger';
  it.each([
    [coded('connect ECONNREFUSED 10.0.0.5:6432', 'ECONNREFUSED'), 'nothing listens there: connect ECONNREFUSED 10.0.0.5:6432'],
    [coded('getaddrinfo ENOTFOUND db.internal', 'ENOTFOUND'), 'the host name does not resolve: getaddrinfo ENOTFOUND db.internal'],
    [
      coded('password authentication failed for user "gateway"', '28P01'),
      'the password was refused: password authentication failed for user "gateway" (28P01)',
    ],
    [coded('database "ledger" does not exist', '3D000'), 'the database does not exist (create it, then run migrate): database "ledger" does not exist (3D000)'],
    [new AggregateError([coded('connect ECONNREFUSED ::1:6432', 'ECONNREFUSED')], ''), 'nothing listens there: connect ECONNREFUSED ::1:6432'],
    [new Error('The server does not support SSL connections'), 'The server does not support SSL connections'],
  ])('%s', (error, why) => {
    const line = describeDatabaseFailure(url, error);
    expect(line).toBe(`database.url: cannot use PostgreSQL at db.internal:6432/ledger: ${why}`);
    expect(line).not.toContain('s3cret');
  });

  it('names the SQLite file and its code', () => {
    expect(describeDatabaseFailure('sqlite:/data/gateway.db', coded('unable to open database file', 'SQLITE_CANTOPEN'))).toBe(
      'database.url: cannot use the SQLite file /data/gateway.db: the file cannot be opened (does its folder exist and may this user write it?): unable to open database file (SQLITE_CANTOPEN)',
    );
  });
});
