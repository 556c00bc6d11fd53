/**
 * Starts test/fakes/smsc.pl, an SMSC whose PDUs Debian's Net::SMPP (libnet-smpp-perl) reads and writes, so the
 * plugin's SMPP is checked against a reading of the protocol that is not the `smpp` npm package's
 * (docs/providers.md §8.5). Every PDU the SMSC reads comes back here as Net::SMPP decoded it; commands make it answer, deliver,
 * unbind or drop the connection.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A PDU as Net::SMPP decoded it: octet strings in hex, optional parameters by tag (`0x020c`) in hex. */
export interface NetSmppPdu {
  event: 'pdu';
  name: string;
  command_id: string;
  status: number;
  seq: number;
  system_id?: string;
  password?: string;
  service_type?: string;
  source_addr_ton?: number;
  source_addr_npi?: number;
  source_addr?: string;
  dest_addr_ton?: number;
  dest_addr_npi?: number;
  destination_addr?: string;
  esm_class?: number;
  registered_delivery?: number;
  data_coding?: number;
  message_id?: string;
  short_message?: string;
  tlv: Record<string, string>;
}

type SmscEvent =
  | NetSmppPdu
  | { event: 'listening'; port: number }
  | { event: 'accepted'; seq: number; message_id: string }
  | { event: 'sent'; name: string; seq: number }
  | { event: 'connected' | 'closed' }
  | { event: 'error'; error: string };

export interface NetSmppSmsc {
  host: string;
  port: number;
  systemId: string;
  password: string;
  /** Every event in arrival order. */
  events: SmscEvent[];
  /** The PDUs the SMSC read, in order. */
  pdus(name?: string): NetSmppPdu[];
  /** The message ids it gave, in answer order. */
  acceptedIds(): string[];
  /** command_status of the next submit_sm answers, in order (0: accepted; `nack:N`: a generic_nack with status N instead). */
  answerNext(...statuses: Array<number | `nack:${number}`>): void;
  /** A deliver_sm from the SMSC: Net::SMPP field names; `text` goes as short_message, `tlv` in hex by tag name. */
  deliver(fields: { text?: string | Buffer; tlv?: Record<string, string | Buffer> } & Record<string, unknown>): void;
  unbind(): void;
  enquireLink(): void;
  /** Closes the connection without an unbind, as a crashed SMSC or a cut line does. */
  drop(): void;
  /** Resolves when `predicate` holds for some event (from `from` on), or fails after `ms`. */
  waitFor<T extends SmscEvent>(predicate: (e: SmscEvent) => e is T, ms?: number, from?: number): Promise<T>;
  waitFor(predicate: (e: SmscEvent) => boolean, ms?: number, from?: number): Promise<SmscEvent>;
  close(): Promise<void>;
}

const hex = (v: string | Buffer) => (typeof v === 'string' ? Buffer.from(v, 'latin1') : v).toString('hex');

export async function startNetSmppSmsc(options: { systemId?: string; password?: string } = {}): Promise<NetSmppSmsc> {
  const systemId = options.systemId ?? 'gateway';
  const password = options.password ?? 'secret1';
  const script = fileURLToPath(new URL('./smsc.pl', import.meta.url));
  const child: ChildProcessWithoutNullStreams = spawn('perl', [script, systemId, password], { stdio: ['pipe', 'pipe', 'pipe'] });
  const events: SmscEvent[] = [];
  const waiters = new Set<() => void>();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    events.push(JSON.parse(line) as SmscEvent);
    for (const w of waiters) w();
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const send = (command: Record<string, unknown>) => child.stdin.write(`${JSON.stringify(command)}\n`);

  function waitFor(predicate: (e: SmscEvent) => boolean, ms = 5_000, from = 0): Promise<SmscEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = events.slice(from).find(predicate);
        if (!hit) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(hit);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(`Net::SMPP SMSC: no such event in ${ms} ms; events: ${JSON.stringify(events.slice(from).slice(-10))}; stderr: ${stderr.slice(-2000)}`),
        );
      }, ms);
      waiters.add(check);
      check();
    });
  }

  const listening = (await waitFor((e) => e.event === 'listening', 10_000)) as { port: number };
  return {
    host: '127.0.0.1',
    port: listening.port,
    systemId,
    password,
    events,
    pdus: (name) => events.filter((e): e is NetSmppPdu => e.event === 'pdu' && (name === undefined || e.name === name)),
    acceptedIds: () => events.flatMap((e) => (e.event === 'accepted' ? [e.message_id] : [])),
    answerNext: (...statuses) => send({ cmd: 'answer', statuses }),
    deliver({ text, tlv, ...fields }) {
      send({
        cmd: 'deliver',
        ...fields,
        short_message_hex: text === undefined ? '' : hex(text),
        tlv: Object.fromEntries(Object.entries(tlv ?? {}).map(([k, v]) => [k, hex(v)])),
      });
    },
    unbind: () => send({ cmd: 'unbind' }),
    enquireLink: () => send({ cmd: 'enquire_link' }),
    drop: () => send({ cmd: 'drop' }),
    waitFor: waitFor as NetSmppSmsc['waitFor'],
    async close() {
      send({ cmd: 'quit' });
      const killer = setTimeout(() => child.kill('SIGKILL'), 2_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
