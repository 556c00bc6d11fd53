/** Provider plugins by `type`. Adding a provider: one file beside this one, one line here, one fake in test/fakes/. */
import { infobip } from './infobip.js';
import { sandbox } from './sandbox.js';
import { sinch } from './sinch.js';
import { smpp } from './smpp/index.js';
import { twilio } from './twilio/index.js';
import { vonage } from './vonage/index.js';
import type { ProviderPlugin } from './types.js';

export const providerPlugins = {
  sandbox,
  smpp,
  twilio,
  vonage,
  infobip,
  sinch,
} as const satisfies Record<string, ProviderPlugin>;

export type ProviderType = keyof typeof providerPlugins;
