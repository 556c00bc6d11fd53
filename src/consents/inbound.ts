/**
 * An inbound SMS, verified by its provider's plugin: kept (once per provider message id), and when its text is an
 * opt-out or opt-in keyword, the players whose mobile is the sender's number are opted out of or back into sms,
 * with a User Consents event each, all in one transaction (src/ledger/consent-changes.ts).
 * On the http backend the platform holds the players and offers no lookup by number, so the message is kept with
 * no players matched (docs/consents.md).
 */
import type { Kysely } from 'kysely';
import type { Config } from '../config/schema.js';
import type { Logger } from 'pino';
import type { InboundSms } from '../../providers/types.js';
import { consentChangeEvent } from '../crm/user-events.js';
import { recordSmsConsentChanges } from '../ledger/consent-changes.js';
import { findUserIdsByMobile, insertInboundMessage } from '../ledger/consents.js';
import type { Database } from '../ledger/schema.js';
import { maskPhoneNumber } from '../observability/logger.js';
import type { RecipientCheck } from './suppression.js';
import { keywordAction, type KeywordAction, type KeywordLists } from './keywords.js';
import { inTransaction } from '../ledger/engine/db.js';

export interface InboundDeps {
  db: Kysely<Database>;
  backend: 'sql' | 'http';
  storeContent: boolean;
  keywords: KeywordLists;
  recipients?: RecipientCheck;
  now: () => number;
  logger: Logger;
}

export interface InboundOutcome {
  /** false: the provider sent this message before (same id); nothing was changed again. */
  stored: boolean;
  action: KeywordAction | null;
  /** Players whose sms consent this message changed. */
  changed: string[];
}

/** Only a plain E.164 sender can be a player's mobile (Twilio also posts `whatsapp:+…` and short codes). */
const E164 = /^\+\d{6,15}$/;

export async function receiveInbound(deps: InboundDeps, provider: string, sms: InboundSms): Promise<InboundOutcome> {
  const action = keywordAction(sms.text, deps.keywords);
  const at = deps.now();
  const outcome = await inTransaction(deps.db, async (trx): Promise<InboundOutcome> => {
    const matched = deps.backend === 'sql' && E164.test(sms.from) ? await findUserIdsByMobile(trx, sms.from) : [];
    const stored = await insertInboundMessage(trx, {
      provider,
      provider_message_id: sms.providerMessageId,
      from_number: sms.from,
      to_number: sms.to,
      content: deps.storeContent ? sms.text : null,
      action,
      matched_user_ids: JSON.stringify(matched),
      received_at: at,
    });
    if (!stored || !action || matched.length === 0) return { stored, action, changed: [] };
    const changed = await recordSmsConsentChanges(
      trx,
      matched.map((userId) => ({ userId, optedIn: action === 'opt_in', source: 'sms' as const, at })),
      consentChangeEvent,
    );
    return { stored, action, changed };
  });
  for (const userId of outcome.changed) deps.recipients?.forget(userId);
  deps.logger.info(
    { provider, from: maskPhoneNumber(sms.from), action, players: outcome.changed.length, repeated: !outcome.stored },
    action ? `inbound sms: ${action === 'opt_out' ? 'opt-out' : 'opt-in'}` : 'inbound sms',
  );
  return outcome;
}

/**
 * The inbound handling of /mo/{provider} (routes.ts) and of messages a plugin receives itself (SMPP deliver_sm), with
 * the configured keywords and operator backend.
 */
export function createInboundReceiver(
  config: Pick<Readonly<Config>, 'operator' | 'ledger' | 'sms'>,
  deps: Pick<InboundDeps, 'db' | 'recipients' | 'now' | 'logger'>,
): (provider: string, sms: InboundSms) => Promise<InboundOutcome> {
  const inboundDeps: InboundDeps = {
    ...deps,
    backend: config.operator.backend,
    storeContent: config.ledger.store_content,
    keywords: { optOut: config.sms.opt_out_keywords, optIn: config.sms.opt_in_keywords },
  };
  return (provider, sms) => receiveInbound(inboundDeps, provider, sms);
}
