/**
 * One SMPP 3.4 transceiver bind kept up for a provider (SMPP 3.4 §2.2, §4.1.5, §4.11), over the `smpp` package's
 * client session: bind_transceiver with system_id/password/system_type, enquire_link every `enquireLinkMs` (a
 * missing enquire_link_resp drops the connection), a rebind after any loss with doubling backoff, a window of
 * outstanding submit_sm, deliver_sm handed to `onDeliverSm` and acknowledged after it resolves, and unbind on close.
 *
 * A submit_sm either got its submit_sm_resp (`answered`), provably never left (`not_sent`: not bound, window wait
 * over, or the socket refused the write), or went out and its answer was lost (`lost`: the connection dropped or
 * no answer came in time; the SMSC may have taken the message).
 */
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type smpp from 'smpp';

/**
 * The `smpp` package (and the iconv-lite tables it loads) comes in with the first bind, so a gateway with no SMPP
 * provider configured never loads it (bench/README.md "Memory"). It is CommonJS, so `require` loads it at once.
 */
const loadSmpp = (): typeof smpp => createRequire(import.meta.url)('smpp') as typeof smpp;

export interface SmppBindOptions {
  host: string;
  port: number;
  /** TLS (SMPP over TLS, often port 3550); `servername`/`ca`/`rejectUnauthorized` pass through to node:tls. */
  tls: false | { servername?: string; ca?: string; rejectUnauthorized: boolean };
  systemId: string;
  password: string;
  systemType: string;
  window: number;
  enquireLinkMs: number;
  /** How long a submit_sm, bind or enquire_link waits for its response. */
  responseTimeoutMs: number;
  rebindMinMs: number;
  rebindMaxMs: number;
}

export type SubmitOutcome =
  | { kind: 'answered'; pdu: smpp.PDU }
  | { kind: 'not_sent'; reason: string; code: string }
  | { kind: 'lost'; reason: string; code: string };

export interface SmppBindHandlers {
  /** A deliver_sm from the SMSC; resolves to the command_status of our deliver_sm_resp (0: taken). */
  onDeliverSm(pdu: smpp.PDU): Promise<number>;
  logger: Logger;
}

export interface SmppBind {
  readonly bound: boolean;
  /** submit_sm PDUs sent and not yet answered (never more than `window`). */
  readonly outstanding: number;
  /** Sends one submit_sm once a window slot is free; gives up unsent when `until` aborts first or the bind drops. */
  submit(params: Record<string, unknown>, until: AbortSignal): Promise<SubmitOutcome>;
  close(): Promise<void>;
}

export function openSmppBind(options: SmppBindOptions, handlers: SmppBindHandlers): SmppBind {
  const { logger } = handlers;
  const library = loadSmpp();
  let session: smpp.Session | undefined;
  let bound = false;
  let closing = false;
  let failures = 0;
  let rebindTimer: NodeJS.Timeout | undefined;
  let enquireTimer: NodeJS.Timeout | undefined;
  let outstanding = 0;
  /** submit_sm in flight on the current connection: told `lost` when it drops. */
  const inFlight = new Set<(outcome: SubmitOutcome) => void>();
  /** Callers waiting for a window slot, first come first served. */
  const waiters: Array<{ grant: () => void; refuse: (reason: string, code: string) => void }> = [];

  function connect(): void {
    rebindTimer = undefined;
    const s = library.connect({
      host: options.host,
      port: options.port,
      ...(options.tls ? { tls: true, ...options.tls } : {}),
    });
    session = s;
    s.on(options.tls ? 'secureConnect' : 'connect', () => {
      const timer = setTimeout(() => drop(s, 'no bind_transceiver_resp in time'), options.responseTimeoutMs);
      s.bind_transceiver({ system_id: options.systemId, password: options.password, system_type: options.systemType, interface_version: 0x34 }, (pdu) => {
        clearTimeout(timer);
        if (pdu.command_status !== 0) return drop(s, `bind refused with status 0x${pdu.command_status.toString(16)}`);
        bound = true;
        failures = 0;
        logger.info({ host: options.host, port: options.port }, 'SMPP bound as transceiver');
        enquireTimer = setInterval(() => enquireLink(s), options.enquireLinkMs);
        enquireTimer.unref();
      });
    });
    s.on('pdu', (pdu: smpp.PDU) => void answerRequest(s, pdu));
    // A PDU the package cannot parse leaves its reader stuck (lib/smpp.js), so any error ends the connection.
    s.on('error', (error: Error) => drop(s, error.message));
    s.on('close', () => drop(s, 'connection closed'));
  }

  async function answerRequest(s: smpp.Session, pdu: smpp.PDU): Promise<void> {
    if (pdu.isResponse()) return;
    switch (pdu.command) {
      case 'enquire_link':
        return void s.send(pdu.response());
      case 'unbind':
        s.send(pdu.response());
        return drop(s, 'the SMSC unbound');
      case 'deliver_sm': {
        let status: number;
        try {
          status = await handlers.onDeliverSm(pdu);
        } catch (error) {
          // Not stored: ESME_RX_T_APPN asks the SMSC to deliver it again later.
          logger.error({ err: error }, 'deliver_sm could not be stored; answered ESME_RX_T_APPN');
          status = library.errors.ESME_RX_T_APPN!;
        }
        return void s.send(pdu.response({ command_status: status }));
      }
      default:
        return void s.send(pdu.response({ command_status: library.errors.ESME_RINVCMDID }));
    }
  }

  function enquireLink(s: smpp.Session): void {
    const timer = setTimeout(() => drop(s, 'no enquire_link_resp in time'), options.responseTimeoutMs);
    s.enquire_link({}, () => clearTimeout(timer));
  }

  /** Ends connection `s` (once), fails what depended on it and schedules a rebind. */
  function drop(s: smpp.Session, reason: string): void {
    if (session !== s) return;
    session = undefined;
    const wasBound = bound;
    bound = false;
    clearInterval(enquireTimer);
    s.destroy();
    for (const tell of [...inFlight]) tell({ kind: 'lost', reason: `the bind was lost after the submit_sm went out (${reason})`, code: 'bind_lost' });
    for (const w of waiters.splice(0)) w.refuse(`the bind is down (${reason})`, 'bind_down');
    if (closing) return;
    failures++;
    const delay = Math.min(options.rebindMaxMs, options.rebindMinMs * 2 ** Math.min(failures - 1, 16));
    logger.warn({ reason, was_bound: wasBound, rebind_in_ms: delay }, 'SMPP bind lost; rebinding');
    rebindTimer = setTimeout(connect, delay);
    rebindTimer.unref();
  }

  function release(): void {
    const next = waiters.shift();
    if (next) next.grant();
    else outstanding--;
  }

  function waitForSlot(until: AbortSignal): Promise<{ ok: true } | { ok: false; reason: string; code: string }> {
    if (outstanding < options.window) {
      outstanding++;
      return Promise.resolve({ ok: true });
    }
    if (until.aborted) return Promise.resolve({ ok: false, reason: 'the window stayed full', code: 'window_full' });
    return new Promise((resolve) => {
      const entry = {
        grant: () => {
          until.removeEventListener('abort', giveUp);
          resolve({ ok: true });
        },
        refuse: (reason: string, code: string) => {
          until.removeEventListener('abort', giveUp);
          resolve({ ok: false, reason, code });
        },
      };
      const giveUp = () => {
        const i = waiters.indexOf(entry);
        if (i >= 0) waiters.splice(i, 1);
        resolve({ ok: false, reason: `the window stayed full (${options.window} submit_sm outstanding)`, code: 'window_full' });
      };
      waiters.push(entry);
      until.addEventListener('abort', giveUp, { once: true });
    });
  }

  async function submit(params: Record<string, unknown>, until: AbortSignal): Promise<SubmitOutcome> {
    if (!bound) return { kind: 'not_sent', reason: 'the bind is down', code: 'bind_down' };
    const slot = await waitForSlot(until);
    if (!slot.ok) return { kind: 'not_sent', ...slot };
    const s = session;
    if (!bound || !s) {
      release();
      return { kind: 'not_sent', reason: 'the bind is down', code: 'bind_down' };
    }
    return new Promise<SubmitOutcome>((resolve) => {
      const finish = (outcome: SubmitOutcome) => {
        if (!inFlight.delete(finish)) return;
        clearTimeout(timer);
        release();
        resolve(outcome);
      };
      inFlight.add(finish);
      const timer = setTimeout(
        () => finish({ kind: 'lost', reason: `no submit_sm_resp within ${options.responseTimeoutMs} ms`, code: 'timeout' }),
        options.responseTimeoutMs,
      );
      const written = s.submit_sm(params, (pdu) => finish({ kind: 'answered', pdu }));
      if (!written) finish({ kind: 'not_sent', reason: 'the connection is not writable', code: 'bind_down' });
    });
  }

  connect();
  return {
    get bound() {
      return bound;
    },
    get outstanding() {
      return outstanding;
    },
    submit,
    async close() {
      closing = true;
      clearTimeout(rebindTimer);
      const s = session;
      if (!s) return;
      if (bound) {
        // unbind, and wait briefly for its answer: the SMSC then knows we left on purpose (SMPP 3.4 §4.2).
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(options.responseTimeoutMs, 2_000));
          s.unbind({}, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      drop(s, 'the gateway is stopping');
    },
  };
}
