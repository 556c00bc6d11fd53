/**
 * The send path's second step: hand one claimed message to its provider and get its answer (SendResult), within
 * the request's deadline, and never past a shutdown. Nothing here touches the ledger: the claim before it and the
 * record after it do (src/sms/claim.ts, src/sms/record.ts).
 */
import { setMaxListeners } from 'node:events';
import { NOT_SENT_SHUTTING_DOWN, type SendRequest, type SendResult } from '../../providers/types.js';
import type { PreparedMessage } from './prepare.js';
import type { FailoverRoute } from '../provider-wrappers/failover-route.js';

export interface SendStepDeps {
  now: () => number;
  /** sms.send_timeout: the longest one provider call may take. */
  sendTimeoutMs: number;
  callbackUrl: (providerName: string, smsId: string) => string;
}

export interface SendTimes {
  /** Epoch ms after which a message not yet handed to its provider is not sent (answered transient). */
  deadline: number;
  /** Epoch ms until which it may wait for provider capacity (the throttle, src/provider-wrappers/throttle.ts). */
  waitDeadline: number;
}

/**
 * An AbortSignal.timeout per message costs more than a sandbox send; messages whose deadlines fall in the same
 * 50 ms window share one signal (a provider call may run up to 50 ms past its deadline).
 */
function createDeadlineSignals(now: () => number, abandon: AbortSignal) {
  const signals = new Map<number, AbortSignal>();
  return (deadline: number): AbortSignal => {
    const window = Math.ceil(deadline / 50) * 50;
    let signal = signals.get(window);
    if (!signal) {
      if (signals.size > 1_000) for (const [w, s] of signals) if (s.aborted) signals.delete(w);
      // Also aborted when a shutdown abandons the calls in flight (abandonInFlight).
      signal = AbortSignal.any([AbortSignal.timeout(Math.max(0, window - now())), abandon]);
      // Every in-flight provider call listens on it (undici adds one abort listener per request); without this,
      // more than 10 sharers print a MaxListenersExceededWarning per window.
      setMaxListeners(0, signal);
      signals.set(window, signal);
    }
    return signal;
  };
}

/** The end of a validity of `minutes` counted from `from` (SendRequest.validUntil). */
export function validUntilOf(minutes: number, from: number): number {
  return from + minutes * 60_000;
}

export function createSendStep(deps: SendStepDeps) {
  const { now } = deps;
  /** Aborted by stopSending(): nothing more is handed to a provider, and capacity waits end. */
  const stopping = new AbortController();
  /** Aborted by abandonInFlight(): provider calls under way end as if their timeout fired. */
  const abandoning = new AbortController();
  const signalFor = createDeadlineSignals(now, abandoning.signal);

  return {
    /** True once stopSending() was called: nothing more is claimed either. */
    get stopping(): boolean {
      return stopping.signal.aborted;
    },

    /** The provider's answer for one claimed message; a plugin's throw is answered as a transient failure. */
    async send(message: PreparedMessage, smsId: string, times: SendTimes): Promise<SendResult> {
      if (times.deadline <= now()) return { ok: false, kind: 'transient', error: 'not sent before the batch deadline; retry' };
      if (stopping.signal.aborted) return NOT_SENT_SHUTTING_DOWN;
      try {
        const request: SendRequest = {
          smsId,
          to: message.recipient,
          country: message.country,
          from: message.sender ?? undefined,
          text: message.text,
          encoding: message.encoding,
          segments: message.segments,
          callbackUrl: deps.callbackUrl(message.provider.name, smsId),
          deadline: times.waitDeadline,
          waitSignal: stopping.signal,
        };
        const signal = signalFor(Math.min(now() + deps.sendTimeoutMs, times.deadline));
        const choice = message.verdict?.ok ? message.verdict.choice : undefined;
        if (!choice) return await message.provider.send(request, signal);
        // Counted from the moment it is handed over, or for a held message from when it was accepted: the time it was
        // held is part of its validity (held-sends.ts does not send one whose validity ran out while held).
        if (choice.validity !== undefined) request.validUntil = validUntilOf(choice.validity, message.acceptedAt ?? now());
        return await (message.provider as FailoverRoute).sendChosen(choice, request, signal);
      } catch (error) {
        // A plugin should answer with values, but a throw must not lose the message: treat it as transient.
        return { ok: false, kind: 'transient', error: `provider ${message.provider.name} failed: ${(error as Error).message}` };
      }
    },

    stopSending(): void {
      stopping.abort();
    },

    abandonInFlight(): void {
      stopping.abort();
      abandoning.abort();
    },
  };
}
