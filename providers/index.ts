/** Provider plugins by `type`. Adding a provider: one file beside this one, one line here, one fake in test/fakes/. */
import { sandbox } from './sandbox.js';
import { smpp } from './smpp.js';
import { twilio } from './twilio.js';
import { vonage } from './vonage.js';
import type { ProviderPlugin } from './types.js';

export const providerPlugins = {
  sandbox,
  smpp,
  twilio,
  vonage,
} as const satisfies Record<string, ProviderPlugin>;

export type ProviderType = keyof typeof providerPlugins;
