/**
 * The admin changes to routing in force (suspensions, weights, a rule's members: src/provider-wrappers/routing-controls.ts
 * decides what they mean), and their audit. Every instance on the database reads them every routing.control_poll,
 * so a change made through one reaches all; a row stays until cleared, across restarts.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database, RoutingControlAuditTable, RoutingControlsTable } from './schema.js';

type Db = Kysely<Database> | Transaction<Database>;

export type RoutingControlRow = RoutingControlsTable;
export type RoutingAuditRow = Omit<RoutingControlAuditTable, 'id'> & { id: number };

export async function listRoutingControls(db: Db): Promise<RoutingControlRow[]> {
  const rows = await db.selectFrom('routing_controls').selectAll().orderBy('target').execute();
  // PostgreSQL hands bigint back as text.
  return rows.map((r) => ({ ...r, set_at: Number(r.set_at) }));
}

/**
 * Sets (value) or clears (null) one target, and writes its audit row in the same transaction. Returns the value that
 * was in force before (null: none), or `unchanged` when the new value is the one in force (nothing written).
 */
export async function changeRoutingControl(
  db: Kysely<Database>,
  change: { target: string; value: string | null; actor: string; at: number },
): Promise<{ before: string | null } | 'unchanged'> {
  return db.transaction().execute(async (trx) => {
    const current = await trx.selectFrom('routing_controls').select('value').where('target', '=', change.target).executeTakeFirst();
    const before = current?.value ?? null;
    if (before === change.value) return 'unchanged' as const;
    if (change.value === null) await trx.deleteFrom('routing_controls').where('target', '=', change.target).execute();
    else
      await trx
        .insertInto('routing_controls')
        .values({ target: change.target, value: change.value, set_by: change.actor, set_at: change.at })
        .onConflict((oc) => oc.column('target').doUpdateSet({ value: change.value!, set_by: change.actor, set_at: change.at }))
        .execute();
    await trx
      .insertInto('routing_control_audit')
      .values({ at: change.at, actor: change.actor, target: change.target, from_value: before, to_value: change.value })
      .execute();
    return { before };
  });
}

/** The newest audit rows first. */
export async function listRoutingAudit(db: Db, limit: number): Promise<RoutingAuditRow[]> {
  const rows = await db.selectFrom('routing_control_audit').selectAll().orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), at: Number(r.at) }));
}
