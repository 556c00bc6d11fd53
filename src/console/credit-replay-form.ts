/**
 * What a replay post from the console's dead-credit list asks for: the credit whose Replay button was pressed
 * (`only`), the ticked credits (`action=selected`), or every dead credit matching the list's filter
 * (`action=matching`: user_id). Pure; the form is read by console/dead-replay-form.ts.
 */
import type { DeadCreditMatch } from '../ledger/credit-delivery.js';
import { readDeadReplayForm, userIdField } from './dead-replay-form.js';

/** credit_ids are the ledger's row ids, as POST /bonus/credit answered them. */
const CREDIT_ID = /^[1-9]\d{0,14}$/;

export function creditReplayFormMatch(form: FormData): { ok: true; match: DeadCreditMatch } | { ok: false; error: string } {
  const read = readDeadReplayForm(form, {
    noun: 'credit',
    idPattern: CREDIT_ID,
    filter: (text) => {
      const user = userIdField(text);
      return user.ok ? { ok: true, filter: user.userId ? { userId: user.userId } : {} } : user;
    },
  });
  if (!read.ok) return read;
  return { ok: true, match: read.ids ? { ids: read.ids.map(Number) } : read.filter };
}
