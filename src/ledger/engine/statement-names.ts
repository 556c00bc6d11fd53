/**
 * Named statements on PostgreSQL. A statement sent with a name is parsed once per connection, and after its fifth
 * run PostgreSQL may keep one generic plan for it instead of planning it again each time. The event relay's rounds
 * spent more time planning their statements than running them (bench/README.md "Named statements on PostgreSQL").
 *
 * Naming is chosen statement by statement (`named`), not for every statement: a generic plan is made from the
 * statistics of its moment and kept until they change (an ANALYZE, which autovacuum runs as a table grows) or its
 * connection ends (the pool retires each after ten minutes, src/ledger/engine/postgres.ts). Named on a
 * server without autovacuum, the send path's update of its answers kept a plan made while its table was empty and ran
 * six times slower than planned afresh, for no saving (its planning is a small part of its time).
 * A statement to name:
 * - spends a large part of its time being planned and reads a few rows by its indexes, so that one plan serves every
 *   run: partial indexes' conditions written in its text, not bound as parameters;
 * - lists its result's columns: one with `*` would fail for good once its table gained a column ("cached plan must
 *   not change result type"), as where an older version keeps serving beside a newer one's migration
 *   (docs/deployment.md);
 * - has a bounded number of texts (lists in the sizes of src/ledger/chunks.ts, values bound, never in the text).
 */
import { type RawBuilder, sql } from 'kysely';

/** Marks a statement's text: the PostgreSQL pool sends texts that begin with it under a name. */
const MARK = '/* named */ ';

/** `query`, to be sent under a name on PostgreSQL (on SQLite the mark is a comment). */
export function named<T>(query: RawBuilder<T>): RawBuilder<T> {
  return sql<T>`${sql.raw(MARK)}${query}`;
}

export class StatementNames {
  private readonly names = new Map<string, string>();
  private stopped = false;

  /** `maxTexts` bounds what a connection keeps on the server should a named text ever carry a value. */
  constructor(private readonly maxTexts = 200) {}

  /** The name to send `text` under, the same for the same text; undefined to send it unnamed. */
  nameOf(text: string): string | undefined {
    if (this.stopped || !text.startsWith(MARK)) return undefined;
    const known = this.names.get(text);
    if (known !== undefined || this.names.size >= this.maxTexts) return known;
    const name = `ledger_${this.names.size}`;
    this.names.set(text, name);
    return name;
  }

  /** From now on every text goes unnamed; true the first time. */
  stop(): boolean {
    const naming = !this.stopped;
    this.stopped = true;
    return naming;
  }
}
