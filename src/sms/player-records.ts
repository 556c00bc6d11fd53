/**
 * The recipients of messages that name a player whose record the gateway holds are read again with that record,
 * which decides over sms.default_region (recipient-reading.ts). With suppression on the sql backend, the claim does it
 * (src/sms/claim.ts) with the record's place read in its standings statement (src/ledger/consents.ts): no read of its
 * own. Otherwise, before the claim, one lookup for all of a request's messages: the sql backend reads the players'
 * `country` and `mobile_prefix` with one primary-key statement per 500 players on the ledger's read connection
 * (src/ledger/operator-data.ts, findPlayerCountries), so a batch costs one statement, not one per message. Messages without a player, players the data does not know, and the http backend
 * (which would have to ask the platform on the send path: docs/operator-api.md) keep prepare.ts's reading.
 */
import type { PlayerCountry } from '../operator/backend.js';
import type { PreparedMessage } from './prepare.js';
import { decideRecipient, liesWithPlayer, readingFields } from './recipient-reading.js';

/** The players' records' countries (OperatorBackend.playerCountries); absent players are unknown. */
export type PlayerCountries = (userIds: readonly string[]) => Promise<Map<string, PlayerCountry>>;

/** `messages` with each recipient read with its player's record where one is held; the same array when none is. */
export async function readWithPlayerRecords(
  messages: PreparedMessage[],
  playerCountries: PlayerCountries | undefined,
  defaultRegion: string | undefined,
): Promise<PreparedMessage[]> {
  if (!playerCountries) return messages;
  const ids = messages.flatMap((m) => (m.userId !== null && m.recipientAsSent !== undefined ? [m.userId] : []));
  if (ids.length === 0) return messages;
  const records = await playerCountries(ids);
  if (records.size === 0) return messages;
  return messages.map((m) => readWithPlayerRecord(m, m.userId === null ? undefined : records.get(m.userId), defaultRegion));
}

/** `m` with its recipient read with its player's record (the claim's, from the standings it reads); `m` when none. */
export function readWithPlayerRecord(m: PreparedMessage, record: PlayerCountry | undefined, defaultRegion: string | undefined): PreparedMessage {
  if (!record || m.recipientAsSent === undefined) return m;
  // Read after "+" (or as written) in the player's country already: the record says the same.
  if (m.reading?.outcome !== 'refused' && liesWithPlayer(m.recipient, record)) return m;
  const decision = decideRecipient(m.recipientAsSent, { record, defaultRegion });
  // prepare.ts found it a phone number already; the record only adds readings, so this keeps its reading.
  if (decision.outcome === 'invalid') return m;
  return { ...m, ...readingFields(decision) };
}
