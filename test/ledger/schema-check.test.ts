/** What each command does with the schema it finds (judgeSchema), and the line a listener that cannot start gives. */
import { describe, expect, it } from 'vitest';
import { listenFailure } from '../../src/kit/command-error.js';
import { describeKeptLayout, describeMadeLayout, judgeSchema, type SchemaMode, type SchemaVerdict } from '../../src/ledger/engine/schema-check.js';

const CURRENT = { pending: [], unknown: [] };
const STALE = { pending: ['2026-12-01-01-a', '2026-12-01-02-b'], unknown: [] };
const FRESH = { pending: ['m1', 'm2', 'm3', 'm4', 'm5'], unknown: [] };
const NEWER = { pending: [], unknown: ['2099-01-01-00-z'] };
const DIVERGED = { pending: ['2026-12-01-01-a'], unknown: ['2099-01-01-00-z'] };

describe('judgeSchema', () => {
  it.each<[string, { pending: string[]; unknown: string[] }, SchemaMode, string, SchemaVerdict]>([
    ['serve on a current schema runs', CURRENT, 'migrate', 'serve', { migrate: false }],
    ['serve on a stale schema migrates', STALE, 'migrate', 'serve', { migrate: true }],
    [
      'serve --no-migrate on a stale schema refuses, naming migrate',
      STALE,
      'no-migrate',
      'serve --no-migrate',
      {
        migrate: false,
        refuse: 'serve --no-migrate: the database schema is not up to date (2 pending: 2026-12-01-01-a, 2026-12-01-02-b); run `crm-sms-gateway migrate` first',
      },
    ],
    [
      'a job on a fresh database names three migrations and counts the rest',
      FRESH,
      'job',
      'flush',
      { migrate: false, refuse: 'flush: the database schema is not up to date (5 pending: m1, m2, m3 and 2 more); run `crm-sms-gateway migrate` first' },
    ],
    ['a job on a current schema runs without migrating', CURRENT, 'job', 'retention', { migrate: false }],
    [
      'a job on a newer schema refuses',
      NEWER,
      'job',
      'import users',
      {
        migrate: false,
        refuse:
          'import users: the database schema is newer than this crm-sms-gateway (1 unknown migration: 2099-01-01-00-z): a newer version migrated it; run the import users of that version',
      },
    ],
    [
      'serve on a newer schema runs, saying so (a rollback)',
      NEWER,
      'migrate',
      'serve',
      {
        migrate: false,
        notice:
          'the database schema is newer than this crm-sms-gateway (1 unknown migration: 2099-01-01-00-z): a newer version migrated it; running on it as an older version (docs/deployment.md "Rollback")',
      },
    ],
    [
      'serve --no-migrate on a newer schema runs too',
      NEWER,
      'no-migrate',
      'serve --no-migrate',
      { migrate: false, notice: expect.stringContaining('running on it') },
    ],
    [
      'a schema with unknown and missing migrations is refused even by serve',
      DIVERGED,
      'migrate',
      'migrate',
      {
        migrate: false,
        refuse:
          "migrate: the database schema is newer than this crm-sms-gateway (1 unknown migration: 2099-01-01-00-z): a newer version migrated it, and it lacks 1 of this version's migrations: 2026-12-01-01-a; run the newer version",
      },
    ],
  ])('%s', (_label, state, mode, command, verdict) => {
    expect(judgeSchema(state, mode, command)).toEqual(verdict);
  });
});

describe('describeMadeLayout', () => {
  it.each([
    { asked: 'by_day', made: 'by_day', line: /^new ledger: messages and receipts laid out by day/, ok: true },
    { asked: 'flat', made: 'flat', line: /laid out flat \(database\.layout: flat\)$/, ok: true },
    { asked: 'by_day', made: 'flat', line: /laid out flat, not by day: the layout by day needs PostgreSQL 15 or later/, ok: false },
  ] as const)('asked $asked, made $made', ({ asked, made, line, ok }) => {
    const said = describeMadeLayout(asked, made);
    expect(said.line).toMatch(line);
    expect(said.asked).toBe(ok);
  });
});

describe('describeKeptLayout', () => {
  it.each([
    { asked: 'by_day', layout: 'by_day', line: undefined },
    { asked: 'flat', layout: 'flat', line: undefined },
    {
      asked: 'by_day',
      layout: 'flat',
      line: /^ledger laid out flat, not by day as database\.layout asks .*`crm-sms-gateway partition --prepare` while it serves, then `partition`/,
    },
    { asked: 'flat', layout: 'by_day', line: /^ledger laid out by day: database\.layout: flat is read only when a ledger is made$/ },
  ] as const)('asked $asked, the ledger $layout', ({ asked, layout, line }) => {
    const said = describeKeptLayout(asked, layout);
    if (line === undefined) expect(said).toBeUndefined();
    else expect(said).toMatch(line);
  });
});

describe('listenFailure', () => {
  const api = { port: 'server.port', host: 'server.host' };
  const error = (code: string) => Object.assign(new Error(`listen ${code}`), { code });
  it.each([
    ['EADDRINUSE', api, '0.0.0.0', 8080, 'server.port: 0.0.0.0:8080 is already in use (EADDRINUSE): stop what listens there or choose another port'],
    [
      'EACCES',
      { port: 'metrics.port', host: 'metrics.host' },
      '::',
      80,
      'metrics.port: not allowed to listen on [::]:80 (EACCES): ports below 1024 need privileges; use 1024 or above',
    ],
    ['EADDRNOTAVAIL', api, '10.9.9.9', 8080, 'server.host: 10.9.9.9 is not an address of this machine (EADDRNOTAVAIL), so 10.9.9.9:8080 cannot be listened on'],
    ['ENOTFOUND', api, 'gateway.invalid', 8080, 'server.host: gateway.invalid does not resolve (ENOTFOUND), so gateway.invalid:8080 cannot be listened on'],
    ['EMFILE', api, '127.0.0.1', 8080, 'server.port: cannot listen on 127.0.0.1:8080: listen EMFILE'],
  ])('%s', (code, keys, host, port, line) => {
    const failure = listenFailure(keys, host, port, error(code));
    expect(failure.message).toBe(line);
    expect(failure.exitCode).toBe(1);
  });
});
