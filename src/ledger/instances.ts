/**
 * The gateway processes on this database (`gateway_instances`, docs/shared-limits.md): each records a heartbeat,
 * and those whose heartbeat is recent split every provider's rate and concurrency limits between them.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Records that `instanceId` is alive at `now`. */
export async function recordInstanceHeartbeat(db: Kysely<Database>, instanceId: string, now: number, startedAt: number): Promise<void> {
  await db
    .insertInto('gateway_instances')
    .values({ instance_id: instanceId, heartbeat_at: now, started_at: startedAt })
    .onConflict((oc) => oc.column('instance_id').doUpdateSet({ heartbeat_at: now }))
    .execute();
}

/** How many instances recorded a heartbeat at or after `since`. */
export async function countLiveInstances(db: Kysely<Database>, since: number): Promise<number> {
  const row = await db.selectFrom('gateway_instances').select(sql<number>`count(*)`.as('n')).where('heartbeat_at', '>=', since).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Forgets an instance that stops, so the others take its share at their next heartbeat instead of after the expiry. */
export async function removeInstance(db: Kysely<Database>, instanceId: string): Promise<void> {
  await db.deleteFrom('gateway_instances').where('instance_id', '=', instanceId).execute();
}

/** Deletes the rows of instances silent since before `before` (killed ones never remove themselves). */
export async function deleteSilentInstances(db: Kysely<Database>, before: number): Promise<void> {
  await db.deleteFrom('gateway_instances').where('heartbeat_at', '<', before).execute();
}
