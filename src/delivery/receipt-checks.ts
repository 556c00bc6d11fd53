/**
 * How each configured provider's receipts are verified before they are stored (the plugins in providers/), said
 * for people reading a message's timeline. Pure: from the provider's config block.
 */
type Check = (block: Record<string, unknown>) => string;

const CHECKS: ReadonlyMap<string, Check> = new Map<string, Check>([
  [
    'twilio',
    (b) =>
      `X-Twilio-Signature checked against the callback URL and form with auth_token${b.webhook_shared_keys ? ", or a Webhooks Rule's shared key (webhook_shared_keys)" : ''}`,
  ],
  ['vonage', (b) => (b.signature_secret ? 'signed request (JWT or sig) checked with signature_secret' : 'not signed: signature_secret is not set')],
  ['sandbox', (b) => (b.receipt_secret ? 'x-sandbox-signature HMAC checked with receipt_secret' : 'not signed: sandbox without receipt_secret')],
]);

export function describeReceiptChecks(providers: Record<string, { type: string }>): (provider: string) => string {
  const byName = new Map(
    Object.entries(providers).map(([name, block]) => {
      const check = CHECKS.get(block.type);
      return [name, check ? check(block as unknown as Record<string, unknown>) : `checked by the ${block.type} plugin`];
    }),
  );
  return (provider) => byName.get(provider) ?? 'provider no longer configured';
}
