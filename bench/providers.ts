/**
 * The providers run.ts can send through (`--provider`): the gateway's `providers` config for each, and whatever
 * runs outside the gateway to answer it.
 *
 *   sandbox  in the gateway's process; receipts (when asked for) are posted back at once, 500 to a request.
 *   twilio   the `twilio` plugin against the Twilio fake in a child process of its own (twilio-fake-process.ts);
 *            with receipts, the fake posts one signed `delivered` status callback per message to the gateway's
 *            StatusCallback URL, as Twilio does. The gateway listens on port 0 with no server.public_url, so its
 *            callback URLs are built from the address it bound (src/gateway.ts), the same URL the fake posts to
 *            and the signatures are checked against.
 */
import type { ConfigDoc } from './server-process.js';
import { startTwilioFakeProcess, type TwilioFakeStats } from './twilio-fake-process.js';

export interface BenchProvider {
  /** The provider's name in the gateway's config, and the messages' provider_name. */
  name: string;
  /** The gateway's `providers` config section. */
  providers: ConfigDoc;
  /** CPU (user + system, ms) of the provider's own process so far; null when it runs in the gateway's. */
  cpuMs(): number | null;
  /** What the provider has seen, for error messages when a run stalls. */
  stats(): Promise<TwilioFakeStats | null>;
  stop(): Promise<void>;
}

export const PROVIDERS = ['sandbox', 'twilio'] as const;
export type ProviderChoice = (typeof PROVIDERS)[number];

/** `receipts`: whether every message gets a `delivered` receipt at once (e2e) or none while measured. */
export async function startBenchProvider(choice: ProviderChoice, receipts: boolean): Promise<BenchProvider> {
  if (choice === 'sandbox') {
    return {
      name: 'sandbox',
      // Without receipts they are due an hour after the send: none is posted while the send path is measured.
      providers: { sandbox: { type: 'sandbox', dlr_delay_ms: receipts ? 0 : 3_600_000 } },
      cpuMs: () => null,
      stats: async () => null,
      stop: async () => {},
    };
  }
  const fake = await startTwilioFakeProcess({ callbackStatuses: receipts ? ['delivered'] : [] });
  const { url, accountSid, authToken } = fake.info;
  return {
    name: 'twilio',
    providers: { twilio: { type: 'twilio', account_sid: accountSid, auth_token: authToken, from: '+15005550006', base_url: url } },
    cpuMs: () => fake.cpuMs(),
    stats: () => fake.stats(),
    stop: () => fake.stop(),
  };
}
