/**
 * The admin API's replay of an outbox's dead rows (POST /admin/conversions/replay, /admin/events/replay,
 * /admin/credits/replay): the body read and checked by the kind's rules, the matching dead rows due again with a
 * fresh retry budget, the kind's outbox woken when any was, and `{ replayed }` answered. Each kind keeps its own
 * request schema and the words of its 400s (the routes' documented answers).
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import { DEFAULT_MAX_JSON_DEPTH, refuseJsonText } from '../http/json-body.js';
import type { OutboxKindName, Wake } from './wake.js';

/** A refused request: its status and answer body (`code` only where the kind's answers have always carried it). */
export type ReplayRefusal = { ok: false; status: 400 | 415; answer: { error: string; code?: number } };

export interface ReplaySpec<T> {
  read(c: Context): Promise<{ ok: true; value: T } | ReplayRefusal>;
  replay(request: T): Promise<number>;
  /** The kind whose outbox is woken when any row was replayed. */
  kind: OutboxKindName;
  wake?: Wake | undefined;
}

export function replayRoute<T>(spec: ReplaySpec<T>) {
  return async (c: Context) => {
    const request = await spec.read(c);
    if (!request.ok) return c.json(request.answer, request.status);
    const replayed = await spec.replay(request.value);
    if (replayed > 0) spec.wake?.(spec.kind);
    return c.json({ replayed }, 200);
  };
}

/**
 * A replay body as the conversions' and events' routes read it: no body is `{}`; depth and repeated keys as for
 * every other JSON body (src/http/json-body.ts); then the kind's schema, whose first issue `problem` words.
 */
export async function readReplayJson<S extends z.ZodType>(
  c: Context,
  schema: S,
  problem: (issue: z.core.$ZodIssue) => string,
): Promise<{ ok: true; value: z.output<S> } | ReplayRefusal> {
  const text = await c.req.text();
  const refused = refuseJsonText(text, c.get('maxJsonDepth') ?? DEFAULT_MAX_JSON_DEPTH);
  if (refused) return { ok: false, status: 400, answer: { error: refused, code: 400 } };
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    return { ok: false, status: 400, answer: { error: 'body is not valid JSON', code: 400 } };
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) return { ok: false, status: 400, answer: { error: problem(parsed.error.issues[0]!), code: 400 } };
  return { ok: true, value: parsed.data };
}
