import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { named, StatementNames } from '../../src/ledger/engine/statement-names.js';

describe('StatementNames', () => {
  // Kysely without a connection: it only compiles.
  const compiler = new Kysely<object>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  const text = (query: string) => named(sql.raw(query)).compile(compiler).sql;

  it('names the statements marked named, and no other', () => {
    const names = new StatementNames();
    expect(names.nameOf(text('select id from crm_events where id = $1'))).toBeDefined();
    expect(names.nameOf('select id from crm_events where id = $1')).toBeUndefined();
    expect(names.nameOf('/* other */ select 1')).toBeUndefined();
  });

  it('gives a text the same name every time, and another text another name', () => {
    const names = new StatementNames();
    const a = names.nameOf(text('select 1'));
    expect(names.nameOf(text('select 1'))).toBe(a);
    expect(names.nameOf(text('select 2'))).not.toBe(a);
  });

  it('names no more texts than its bound; those it named keep their names', () => {
    const names = new StatementNames(2);
    const first = names.nameOf(text('select 1'));
    names.nameOf(text('select 2'));
    expect(names.nameOf(text('select 3'))).toBeUndefined();
    expect(names.nameOf(text('select 1'))).toBe(first);
  });

  it('names nothing once stopped, and says the first time that it stopped', () => {
    const names = new StatementNames();
    expect(names.nameOf(text('select 1'))).toBeDefined();
    expect(names.stop()).toBe(true);
    expect(names.stop()).toBe(false);
    expect(names.nameOf(text('select 1'))).toBeUndefined();
  });
});
