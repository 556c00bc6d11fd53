/**
 * Which thin events a change of player data causes (docs/relay.md, "Events the gateway causes itself"): Registration for
 * a new user, User Update when the record changed, User Blocks when blocked/excluded (or their notes, which
 * /userblocks answers) changed, User Consents when the consents changed; nothing for a row loaded again unchanged.
 * Reconciliation never calls this: it changes nothing and must cause no event (docs/crm-interface.md §A, POST /reconciliation).
 */
import type { ConsentRow, OperatorUserRow } from '../ledger/operator-data.js';
import type { ThinEventKind } from '../crm/user-events.js';

export interface UserChange {
  /** The user row must be written (new or changed). */
  writeUser: boolean;
  /** The given consents differ from the stored ones and must replace them. */
  writeConsents: boolean;
  events: ThinEventKind[];
}

type UserState = Pick<OperatorUserRow, 'record_json' | 'is_blocked' | 'is_excluded' | 'block_note' | 'exclusion_note'>;

/** The record without the two block flags: a block change alone is a User Blocks event, not a User Update. */
function recordWithoutBlocks(recordJson: string): string {
  const { is_blocked: _b, is_excluded: _e, ...rest } = JSON.parse(recordJson) as Record<string, unknown>;
  return JSON.stringify(rest);
}

/** Consents as stored after a replacement: exactly the given types. */
function sameConsents(before: ConsentRow[], after: ConsentRow[]): boolean {
  if (before.length !== after.length) return false;
  const stored = new Map(before.map((c) => [c.type, `${c.opted_in} ${c.products ?? null}`]));
  return after.every((c) => stored.get(c.type) === `${c.opted_in} ${c.products ?? null}`);
}

export function decideUserChange(
  before: UserState | undefined,
  after: UserState,
  consentsBefore: ConsentRow[],
  consentsAfter: ConsentRow[] | undefined,
): UserChange {
  const consentsChanged = consentsAfter !== undefined && !sameConsents(consentsBefore, consentsAfter);
  // A new user is one Registration: the CRM then reads /userdetails, /userconsents and /userblocks (docs/crm-interface.md §1.1, §2.2).
  if (!before) return { writeUser: true, writeConsents: consentsAfter !== undefined, events: ['registration'] };
  const events: ThinEventKind[] = [];
  const recordChanged = before.record_json !== after.record_json && recordWithoutBlocks(before.record_json) !== recordWithoutBlocks(after.record_json);
  if (recordChanged) events.push('user_update');
  const blocksChanged =
    before.is_blocked !== after.is_blocked ||
    before.is_excluded !== after.is_excluded ||
    before.block_note !== after.block_note ||
    before.exclusion_note !== after.exclusion_note;
  if (blocksChanged) events.push('user_blocks');
  if (consentsChanged) events.push('user_consents');
  const writeUser = recordChanged || blocksChanged || before.record_json !== after.record_json;
  return { writeUser, writeConsents: consentsChanged, events };
}
