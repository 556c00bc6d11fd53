/**
 * Compile once, run many. Kysely builds and compiles a fresh query tree on every call, at a cost per value, so a
 * batch of hundreds of rows pays it hundreds of times on the hot path (docs/design.md §6). A template builds the query
 * once per shape (per array length) with marker values, remembers where each real value goes, and afterwards only
 * fills in parameters: the same SQL Kysely would produce, for whichever dialect the database has. Callers give it
 * row counts from a short ladder (chunks.ts), so each template holds a few shapes.
 */
import type { Compilable, CompiledQuery, Kysely, QueryResult, RootOperationNode } from 'kysely';

const MARK = '\u0000param:';

type Path = Array<string | number>;
type Plan = Array<{ path: Path } | { constant: unknown }>;

function withMarkers(value: unknown, path: Path, paths: Path[]): unknown {
  if (Array.isArray(value)) return value.map((v, i) => withMarkers(v, [...path, i], paths));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withMarkers(v, [...path, k], paths)]));
  }
  paths.push(path);
  return `${MARK}${paths.length - 1}`;
}

function shapeOf(value: unknown): string {
  if (Array.isArray(value)) return `[${value.length}${value.length ? shapeOf(value[0]) : ''}]`;
  if (value !== null && typeof value === 'object') return `{${Object.values(value).map(shapeOf).join('')}}`;
  return '';
}

function valueAt(input: unknown, path: Path): unknown {
  let node = input as Record<string | number, unknown>;
  for (const key of path) node = node[key] as Record<string | number, unknown>;
  return node;
}

/**
 * `build` receives the input with every leaf replaced by a marker and must use each leaf as a query value
 * (not in raw SQL text, and never to decide anything: it runs once per shape, not per call). Inputs must have no `undefined` leaves (use null), since Kysely drops undefined values.
 */
export function createQueryTemplate<Input, Result>(build: (db: Kysely<any>, input: Input) => Compilable<Result>) {
  const cache = new Map<string, { query: CompiledQuery<Result>; plan: Plan }>();
  return async (db: Kysely<any>, input: Input): Promise<QueryResult<Result>> => {
    // The adapter is part of the key: one process may hold a SQLite and a PostgreSQL ledger (tests do).
    const key = `${db.getExecutor().adapter.constructor.name}${shapeOf(input)}`;
    let entry = cache.get(key);
    if (!entry) {
      const paths: Path[] = [];
      const query = build(db, withMarkers(input, [], paths) as Input).compile();
      const plan: Plan = query.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(MARK) ? { path: paths[Number(p.slice(MARK.length))]! } : { constant: p },
      );
      // Only the SQL text is kept: the drivers run a compiled query from its text and parameters, so the query tree
      // (a node per value) and the marker parameters would be held per shape for nothing; SQLite's driver looks at
      // the root node's kind alone, and only to stream.
      entry = { query: { sql: query.sql, queryId: query.queryId, query: { kind: query.query.kind } as RootOperationNode, parameters: [] }, plan };
      cache.set(key, entry);
    }
    const parameters = entry.plan.map((slot) => ('path' in slot ? valueAt(input, slot.path) : slot.constant));
    return db.executeQuery({ ...entry.query, parameters });
  };
}
