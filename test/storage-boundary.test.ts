/**
 * The storage boundary (docs/architecture.md): every SQL statement and every Kysely builder call lives in
 * src/ledger/, in query functions that take the database first. This check reads every other .ts file under src/
 * and providers/ (bench/ is outside it on purpose: benchmarks prepare their data directly) and names each line
 * that writes SQL or builds a query.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot as root, sourceFiles } from './helpers/source-files.js';

const FORBIDDEN: Array<[name: string, pattern: RegExp]> = [
  ['sql template', /\bsql\s*`/],
  ['sql helper', /\bsql\.(lit|raw|ref|join|id|val|table)\s*\(/],
  ['query builder', /\.(selectFrom|insertInto|replaceInto|updateTable|deleteFrom|mergeInto|selectNoFrom)\s*\(/],
  ['schema builder', /\.schema\s*\.\s*(createTable|alterTable|dropTable|createIndex|dropIndex|createView)\b/],
  ['transaction builder', /\.transaction\s*\(\s*\)/],
  ['query execution', /\.(execute|executeTakeFirst|executeTakeFirstOrThrow|stream)\s*\(/],
  ['dialect check', /\b(PostgresAdapter|SqliteAdapter|getExecutor)\b/],
  ['own connection', /\bnew\s+(Kysely|SqliteDialect|PostgresDialect|BetterSqlite3)\b|from\s+'(better-sqlite3|pg)'/],
];

/** The storage calls in a file's text: one entry per offending line, comments ignored. */
export function findStorageCalls(text: string): Array<{ line: number; kind: string; text: string }> {
  const found: Array<{ line: number; kind: string; text: string }> = [];
  let inBlockComment = false;
  text.split('\n').forEach((raw, i) => {
    let code = raw;
    if (inBlockComment) {
      const end = code.indexOf('*/');
      if (end < 0) return;
      code = code.slice(end + 2);
      inBlockComment = false;
    }
    code = code.replace(/\/\*.*?\*\//g, '');
    const open = code.indexOf('/*');
    if (open >= 0) {
      code = code.slice(0, open);
      inBlockComment = true;
    }
    code = code.replace(/(^|[^:'"`])\/\/.*$/, '$1');
    for (const [kind, pattern] of FORBIDDEN) {
      if (pattern.test(code)) {
        found.push({ line: i + 1, kind, text: raw.trim() });
        break;
      }
    }
  });
  return found;
}

describe('storage boundary', () => {
  it.each([
    ['a sql template', 'await sql`select 1`.execute(db);', 'sql template'],
    ['sql.lit', "q.where('x', '=', sql.lit(1))", 'sql helper'],
    ['a select', "const rows = await trx.selectFrom('messages').selectAll()", 'query builder'],
    ['an insert', "db.insertInto('receipts').values(rows)", 'query builder'],
    ['an update on its own line', "    .updateTable('messages')", 'query builder'],
    ['a delete', "db.deleteFrom('receipts')", 'query builder'],
    ['a schema change', "await db.schema.createTable('x')", 'schema builder'],
    ['a transaction', 'await db.transaction().execute(async (trx) => {', 'transaction builder'],
    ['an execute', '      .execute();', 'query execution'],
    ['a dialect check', 'db.getExecutor().adapter instanceof PostgresAdapter', 'dialect check'],
    ['an own connection', "import BetterSqlite3 from 'better-sqlite3';", 'own connection'],
  ])('finds %s', (_label, line, kind) => {
    expect(findStorageCalls(`const a = 1;\n${line}\n`)).toEqual([{ line: 2, kind, text: line.trim() }]);
  });

  it.each([
    ['a line comment', "// db.selectFrom('messages') is in the ledger"],
    ['a doc comment', "/** `sql`: users in this gateway's database */"],
    ['a block comment over lines', "/*\n  db.deleteFrom('x')\n*/ const b = 2;"],
    ['a ledger call', 'await findParkedReceipts(trx, 1_000, { afterId });'],
    ['a unit of work', 'await inTransaction(db, (trx) => insertConversions(trx, rows, now));'],
  ])('ignores %s', (_label, text) => {
    expect(findStorageCalls(text)).toEqual([]);
  });

  it('no file under src/ (outside src/ledger/) or providers/ writes SQL or builds a query', () => {
    const files = [...sourceFiles('src', [join('src', 'ledger')]), ...sourceFiles('providers')];
    expect(files.length).toBeGreaterThan(50);
    const violations = files.flatMap((file) => findStorageCalls(readFileSync(join(root, file), 'utf8')).map((v) => `${file}:${v.line}: ${v.kind}: ${v.text}`));
    expect(violations).toEqual([]);
  });
});
