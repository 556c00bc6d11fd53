/**
 * The query string of an outbox's lists (the admin API's and the console's dead conversions, CRM events, dead
 * credits) to the kind's filter, or the first problem naming the parameter. Each kind lists its parameters, in the
 * order its errors name them, and how each one sets the filter. Pure.
 */
import { readQueryParameters, type QueryReadOptions } from '../http/query-parameters.js';

/** Sets one parameter's value into the filter, or answers the error naming the parameter. */
export type ListParameter<F> = (value: string, filter: F) => string | undefined;

export function parseListQuery<F>(
  params: URLSearchParams,
  parameters: Readonly<Record<string, ListParameter<F>>>,
  filter: F,
  options: QueryReadOptions = {},
): { ok: true; filter: F } | { ok: false; error: string } {
  const read = readQueryParameters(params, Object.keys(parameters), options);
  if (!read.ok) return read;
  for (const [name, value] of read.values) {
    const error = parameters[name]!(value, filter);
    if (error !== undefined) return { ok: false, error };
  }
  return { ok: true, filter };
}

/** A parameter that takes one of `values`. */
export function oneOf<F, T extends string>(name: string, values: readonly T[], set: (filter: F, value: T) => void): ListParameter<F> {
  return (value, filter) => {
    const known = values.find((v) => v === value);
    if (known === undefined) return `${name}: must be one of ${values.join(', ')}`;
    set(filter, known);
    return undefined;
  };
}

/** The keyset cursor: a row id this list gave out as next_cursor. */
export function cursorParameter<F>(set: (filter: F, before: number) => void, error = 'cursor: must be the next_cursor of a previous page'): ListParameter<F> {
  return (value, filter) => {
    if (!/^\d{1,15}$/.test(value)) return error;
    set(filter, Number(value));
    return undefined;
  };
}

/** A keyset page from `limit + 1` rows read newest first: the first `limit`, and the cursor of the next page if any. */
export function keysetPage<R extends { id: number }>(rows: R[], limit: number): { rows: R[]; nextCursor: string | null } {
  if (rows.length <= limit) return { rows, nextCursor: null };
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: String(page[page.length - 1]!.id) };
}
