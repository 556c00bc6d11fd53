/** Repository for `console_sessions_revoked`: console sessions ended by sign-out before their cookie expires. */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Records the sign-out (again is harmless) and drops rows of sessions that have expired anyway. */
export async function revokeConsoleSession(db: Kysely<Database>, nonce: string, expiresAt: number, now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('console_sessions_revoked')
      .values({ nonce, expires_at: expiresAt })
      .onConflict((oc) => oc.column('nonce').doNothing())
      .execute();
    await trx.deleteFrom('console_sessions_revoked').where('expires_at', '<=', now).execute();
  });
}

export async function isConsoleSessionRevoked(db: Kysely<Database>, nonce: string): Promise<boolean> {
  const row = await db.selectFrom('console_sessions_revoked').select('nonce').where('nonce', '=', nonce).executeTakeFirst();
  return row !== undefined;
}
