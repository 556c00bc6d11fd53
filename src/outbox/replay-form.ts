/**
 * What a replay post from one of the console's dead lists (dead-list-frame.ts) asks for: the row whose Replay button was
 * pressed (`only`), the ticked rows (`action=selected`), or every dead row matching the list's filter
 * (`action=matching`). Each kind names its ids and reads its own filter (dead-*-page.ts). Pure.
 */

const MAX_IDS = 10_000;

/** One form field: its value, undefined when absent, null when given more than once or not text. */
export type FormText = (name: string) => string | null | undefined;

export interface DeadReplaySpec<F> {
  /** "event", "credit": as the errors name a row. */
  noun: string;
  idPattern: RegExp;
  /** The list's filter fields, or an error naming the field. */
  filter: (text: FormText) => { ok: true; filter: F } | { ok: false; error: string };
  /** Values are trimmed (the conversions' form; the others keep user_ids as given). */
  trim?: boolean;
  /** A post without `action` replays every match (the dashboard's "replay all" of dead conversions). */
  matchingByDefault?: boolean;
}

export type DeadReplayRequest<F> = { ok: true; ids: string[] } | { ok: true; ids?: undefined; filter: F } | { ok: false; error: string };

export function readDeadReplayForm<F>(form: FormData, spec: DeadReplaySpec<F>): DeadReplayRequest<F> {
  const text: FormText = (name) => {
    const values = form.getAll(name);
    if (values.length === 1 && typeof values[0] === 'string') return spec.trim ? values[0].trim() : values[0];
    return values.length === 0 ? undefined : null;
  };
  const only = text('only');
  if (only === null || (only !== undefined && !spec.idPattern.test(only))) return { ok: false, error: `only: must be one ${spec.noun} id` };
  if (only !== undefined) return { ok: true, ids: [only] };
  const action = text('action');
  if (action === 'selected') {
    const ids = form.getAll('ids');
    if (ids.length === 0) return { ok: false, error: `ids: tick at least one dead ${spec.noun}` };
    if (ids.length > MAX_IDS) return { ok: false, error: `ids: at most ${MAX_IDS} at once` };
    if (!ids.every((id): id is string => typeof id === 'string' && spec.idPattern.test(id))) return { ok: false, error: `ids: must be ${spec.noun} ids` };
    return { ok: true, ids };
  }
  if (action !== 'matching' && !(action === undefined && spec.matchingByDefault)) return { ok: false, error: 'action: must be selected or matching' };
  const filter = spec.filter(text);
  return filter.ok ? { ok: true, filter: filter.filter } : filter;
}

/** The user_id field of a list's filter form: absent or empty is no filter. */
export function userIdField(text: FormText): { ok: true; userId?: string } | { ok: false; error: string } {
  const userId = text('user_id');
  if (userId === null || (userId !== undefined && userId.length > 256)) return { ok: false, error: 'user_id: must be one user id of at most 256 characters' };
  return { ok: true, ...(userId ? { userId } : {}) };
}
