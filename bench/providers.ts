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
 *   smpp     the `smpp` plugin bound to the fake SMSC in a child process of its own (smpp-fake-process.ts), with
 *            `--window` submit_sm outstanding (default 10); with receipts, one DELIVRD deliver_sm per submit_sm.
 */
import type { ConfigDoc } from './server-process.js';
import { startSmppFakeProcess, type SmppFakeStats } from './smpp-fake-process.js';
import { startTwilioFakeProcess, type TwilioFakeStats } from './twilio-fake-process.js';

export interface BenchProvider {
  /** The provider's name in the gateway's config, and the messages' provider_name. */
  name: string;
  /** The gateway's `providers` config section. */
  providers: ConfigDoc;
  /** CPU (user + system, ms) of the provider's own process so far; null when it runs in the gateway's. */
  cpuMs(): number | null;
  /** What the provider has seen, for error messages when a run stalls. */
  stats(): Promise<TwilioFakeStats | SmppFakeStats | null>;
  /** Resolves once `processes` gateway processes can send through it (an SMPP bind is up for each). */
  ready?(processes: number): Promise<void>;
  /** Settings that belong in the output line (e.g. the SMPP window). */
  labels?: Record<string, unknown>;
  stop(): Promise<void>;
}

export const PROVIDERS = ['sandbox', 'twilio', 'smpp'] as const;
export type ProviderChoice = (typeof PROVIDERS)[number];

/** `receipts`: whether every message gets a `delivered` receipt at once (e2e) or none while measured. */
export async function startBenchProvider(choice: ProviderChoice, receipts: boolean, settings: { window: number }): Promise<BenchProvider> {
  if (choice === 'sandbox') {
    return {
      name: 'sandbox',
      // Without receipts they are due an hour after the send: none is posted while the send path is measured.
      providers: { sandbox: { type: 'sandbox', ...(receipts ? { dlr_delay_ms: 0 } : { receipts: false }) } },
      cpuMs: () => null,
      stats: async () => null,
      stop: async () => {},
    };
  }
  if (choice === 'smpp') {
    const smsc = await startSmppFakeProcess({ receipts });
    const { host, port, systemId, password } = smsc.info;
    return {
      name: 'smpp',
      providers: { smpp: { type: 'smpp', host, port, system_id: systemId, password, from: 'Casino', window: settings.window, rebind_min: '100ms' } },
      cpuMs: () => smsc.cpuMs(),
      stats: () => smsc.stats(),
      async ready(processes) {
        const until = Date.now() + 10_000;
        while ((await smsc.stats()).bound < processes) {
          if (Date.now() > until) throw new Error(`the gateway did not bind to the fake SMSC within 10 s`);
          await new Promise((r) => setTimeout(r, 20));
        }
      },
      labels: { window: settings.window },
      stop: () => smsc.stop(),
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
