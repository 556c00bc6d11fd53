/**
 * Consent changes the gateway learns of itself (docs/consents.md): a STOP or START by SMS and a provider's opt-out error.
 * On the sql backend the change is written to the player data with recordSmsConsentChanges (in one transaction
 * with what caused it); on the http backend the player data is the platform's, so an opt-out is sent to it as
 * the CRM's unsubscribe page would (POST /userconsents/:id).
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { consentChangeEvent } from '../crm/user-events.js';
import { recordSmsConsentChanges } from '../ledger/consent-changes.js';
import type { Database } from '../ledger/schema.js';
import type { OperatorBackend } from '../operator/backend.js';
import type { RecipientCheck } from './suppression.js';
import { inTransaction } from '../ledger/engine/db.js';

export interface ConsentChangeDeps {
  db: Kysely<Database>;
  backend: OperatorBackend;
  recipients?: RecipientCheck;
  now: () => number;
  logger: Logger;
}

export function createProviderOptOuts(deps: ConsentChangeDeps) {
  return async function recipientOptedOut(optOut: { userId: string; provider: string; smsId: string }): Promise<void> {
    const { userId } = optOut;
    if (deps.backend.name === 'sql') {
      const at = deps.now();
      const changed = await inTransaction(
        deps.db,
        async (trx) =>
          (await recordSmsConsentChanges(trx, [{ userId, optedIn: false, source: 'provider', at, smsId: optOut.smsId }], consentChangeEvent)).length > 0,
      );
      deps.logger.info({ user_id: userId, provider: optOut.provider, sms_id: optOut.smsId, known_player: changed }, 'provider reports the recipient opted out');
    } else {
      const body = { consents: [{ opted_in: false, type: 'sms' }] };
      const result = await deps.backend.updateConsents(userId, [{ opted_in: false, type: 'sms' }], body);
      if (!result.ok && result.kind !== 'not_found') {
        deps.logger.warn({ user_id: userId, provider: optOut.provider, error: result.error }, "could not pass the provider's opt-out to the operator platform");
      }
    }
    deps.recipients?.forget(userId);
  };
}
