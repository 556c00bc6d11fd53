/** Builds provider plugins the way the gateway does (config parsed by the plugin's own schema), for plugin-level tests. */
import pino from 'pino';
import { providerPlugins, type ProviderType } from '../../providers/index.js';
import { smpp, type SmppConfig } from '../../providers/smpp/index.js';
import type { InboundSms, ProviderPlugin, ReceiptEvent, SendRequest, SmsProvider } from '../../providers/types.js';

export const silentLogger = pino({ level: 'silent' });

export function createPlugin(type: ProviderType, config: Record<string, unknown>, now: () => number = Date.now, name: string = type): SmsProvider {
  const plugin = providerPlugins[type] as ProviderPlugin;
  return plugin.create(name, plugin.configSchema.parse({ type, ...config }), { logger: silentLogger, now });
}

let counter = 0;
/** A SendRequest as dispatch builds it; the callback URL carries the sms_id like the gateway's. */
export function sendRequest(publicUrl: string, provider: string, overrides: Partial<SendRequest> = {}): SendRequest {
  const smsId = overrides.smsId ?? `0190c0de-0000-7000-8000-${String(++counter).padStart(12, '0')}`;
  return {
    smsId,
    to: '+447700900123',
    from: 'Casino',
    text: 'Your bonus is waiting',
    encoding: 'gsm7',
    segments: 1,
    callbackUrl: `${publicUrl}/dlr/${provider}?sms_id=${smsId}`,
    ...overrides,
  };
}

export const noAbort = () => new AbortController().signal;

/** Where the SMPP plugin's pushed receipts and inbound messages land, and the plugins a test opened (to close after each). */
export interface SmppSinks {
  received: ReceiptEvent[];
  inbound: InboundSms[];
  open: SmsProvider[];
}

/** The SMPP plugin bound to an SMSC (our fake or Net::SMPP's), with short rebind and answer deadlines for tests. */
export function createSmppPlugin(
  smsc: { host: string; port: number; systemId: string; password: string },
  sinks: SmppSinks,
  overrides: Partial<Record<keyof SmppConfig, unknown>> = {},
): SmsProvider {
  const config = smpp.configSchema.parse({
    type: 'smpp',
    host: smsc.host,
    port: smsc.port,
    system_id: smsc.systemId,
    password: smsc.password,
    rebind_min: '20ms',
    rebind_max: '200ms',
    response_timeout: '2s',
    ...overrides,
  });
  const provider = smpp.create('smpp', config, {
    logger: silentLogger,
    now: Date.now,
    deliverReceipts: async (events) => void sinks.received.push(...events),
    deliverInbound: async (message) => void sinks.inbound.push(message),
  });
  sinks.open.push(provider);
  return provider;
}
