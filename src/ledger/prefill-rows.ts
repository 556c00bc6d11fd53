/**
 * The rows of a prefilled ledger (prefill.ts): what the send path, the receipt intake and the conversion outbox would
 * have left for each message, shaped like production. Messages come in time order, as sends add them; what arrives in
 * no order in production (players, their numbers, provider message ids, receipt keys) is random here too, so the
 * indexes on those keys fill the way a grown ledger's do.
 */
import { randomFillSync } from 'node:crypto';
import { bucketAt, hourAt } from './time-buckets.js';
import { receiptKey, smsIdClock } from './ids.js';

/** One column of a prefilled table: its name, and whether PostgreSQL binds it as text or bigint. */
export interface PrefillColumn {
  name: string;
  type: 'text' | 'bigint';
}

export interface PrefillTable {
  name: string;
  columns: PrefillColumn[];
  /** `on conflict do nothing` (message_user_recipients: a player's number is recorded once). */
  ignoreConflicts?: boolean;
  /** `on conflict (key) do update` adding this column (delivery_stats: a bucket spans batches). */
  addOnConflict?: { key: string[]; column: string };
  /** Written on SQLite only (recipient_messages: a view on PostgreSQL, DialectFlags.writesNumberEntries). */
  sqliteOnly?: boolean;
  /** Written on a PostgreSQL ledger partitioned by day only (message_keys: DialectFlags.partitionsByDay). */
  partitionsOnly?: boolean;
}

const cols = (spec: string): PrefillColumn[] =>
  spec.split(/\s+/).map((c) => (c.startsWith('#') ? { name: c.slice(1), type: 'bigint' } : { name: c, type: 'text' }));

/** The tables written, in the order their rows are written (# marks a number). */
export const PREFILL_TABLES = {
  messages: {
    name: 'messages',
    columns: cols(`sms_id activity_key activity_json user_id request_id provider provider_message_id recipient sender encoding #segments state
      #attempts provider_status delivery_status delivery_source #created_at #updated_at #dispatched_at #submitted_at #completed_at
      #receipts_name_sms_id`),
  },
  receipts: {
    name: 'receipts',
    columns: cols('#id provider dedup_key sms_id provider_message_id provider_status mapped_status error_code #matched #received_at #per_part'),
  },
  conversions: {
    name: 'conversions',
    columns: cols('#id sms_id delivery_status #attempts #next_attempt_at #claimed_until claim_token #posted_at #dead #created_at post_group'),
  },
  conversion_attempts: { name: 'conversion_attempts', columns: cols('#id #conversion_id #attempted_at #ok #http_status') },
  message_user_recipients: { name: 'message_user_recipients', columns: cols('user_id recipient'), ignoreConflicts: true },
  recipient_messages: { name: 'recipient_messages', columns: cols('#day recipient #created_at sms_id'), sqliteOnly: true },
  recipient_messages_recent: { name: 'recipient_messages_recent', columns: cols('#hour recipient #created_at sms_id'), sqliteOnly: true },
  message_user_recipients_recent: { name: 'message_user_recipients_recent', columns: cols('#hour user_id recipient'), ignoreConflicts: true },
  message_keys: { name: 'message_keys', columns: cols('activity_key sms_id'), partitionsOnly: true },
  delivery_stats: {
    name: 'delivery_stats',
    columns: cols('period #bucket_start provider outcome #n'),
    addOnConflict: { key: ['period', 'bucket_start', 'provider', 'outcome'], column: 'n' },
  },
} satisfies Record<string, PrefillTable>;

export type PrefillTableName = keyof typeof PREFILL_TABLES;
type Value = string | number | null;
/** Rows per table, each a list of values in the table's column order. */
export type PrefillBatch = Record<PrefillTableName, Value[][]>;

/**
 * A small fast generator (mulberry32) for what must come out the same from the same seed: a player's number. Its
 * state is 32 bits, so every seed walks the same cycle of 2^32 draws: streams for many batches overlapped, and gave
 * two messages one provider id. The rows draw from the operating system's generator instead (`draw`).
 */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

// Eight hex digits or nine decimal ones per draw: generating the rows costs less than writing them.
const digits = (next: () => number, n: number) => {
  let s = '';
  while (s.length < n)
    s += Math.floor(next() * 1e9)
      .toString()
      .padStart(9, '0');
  return s.slice(0, n);
};
const hex = (next: () => number, n: number) => {
  let s = '';
  while (s.length < n)
    s += Math.floor(next() * 4_294_967_296)
      .toString(16)
      .padStart(8, '0');
  return s.slice(0, n);
};

/** A UUIDv7 (RFC 9562) of the time `ms`, as ids.ts makes them for sends at that time. */
function uuidv7At(ms: number, next: () => number): string {
  const t = ms.toString(16).padStart(12, '0');
  const r = hex(next, 19);
  const variant = '89ab'[Math.floor(next() * 4)];
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(3, 6)}-${r.slice(6, 18)}`;
}
const uuidv4 = (next: () => number) => {
  const r = hex(next, 30);
  return `${r.slice(0, 8)}-${r.slice(8, 12)}-4${r.slice(12, 15)}-a${r.slice(15, 18)}-${r.slice(18, 30)}`;
};

/** Mobile numbers of the countries an operator sends to, with a share of players each (E.164, plausible prefixes). */
const COUNTRIES: Array<[share: number, number: (next: () => number) => string]> = [
  [0.35, (n) => `+447${4 + Math.floor(n() * 6)}${digits(n, 8)}`],
  [0.2, (n) => `+491${['51', '52', '60', '62', '70', '71', '76'][Math.floor(n() * 7)]}${digits(n, 8)}`],
  [0.1, (n) => `+467${['0', '2', '3', '6'][Math.floor(n() * 4)]}${digits(n, 7)}`],
  [0.05, (n) => `+356${['79', '99', '77'][Math.floor(n() * 3)]}${digits(n, 6)}`],
  [0.1, (n) => `+1${['416', '647', '604', '514'][Math.floor(n() * 4)]}${2 + Math.floor(n() * 8)}${digits(n, 6)}`],
  [0.2, (n) => `+55${['11', '21', '31', '41'][Math.floor(n() * 4)]}9${digits(n, 8)}`],
];

/** A player's number: always the same for the same player and choice (most players have one, some two). */
function numberOf(player: number, choice: number): string {
  const next = random(player * 2 + choice + 1);
  let pick = next();
  for (const [share, make] of COUNTRIES) {
    if (pick < share) return make(next);
    pick -= share;
  }
  return COUNTRIES[0]![1](next);
}

/** The players of a prefilled ledger of `messages` messages: each has about a dozen. */
export const prefillPlayers = (messages: number) => Math.max(1, Math.round(messages / 12));

/** Player `player` of a prefilled ledger as a send names it: its user_id and its first number. */
export function prefillPlayer(player: number): { userId: string; recipient: string } {
  return { userId: String(1_000_000 + player), recipient: numberOf(player, 0) };
}

/** Each provider's message ids and raw statuses, as its receipts carry them. */
interface ProviderShape {
  id(next: () => number): string;
  statuses: Record<'delivered' | 'undelivered' | 'failed', string>;
  errorCodes: string[];
  /** Whether its receipts carry our sms_id (Twilio in the callback URL, the sandbox in the body); SMPP's do not. */
  echoesSmsId: boolean;
}

const SHAPES: Record<string, ProviderShape> = {
  twilio: {
    id: (n) => `SM${hex(n, 32)}`,
    statuses: { delivered: 'delivered', undelivered: 'undelivered', failed: 'failed' },
    errorCodes: ['30003', '30005', '30006', '30008'],
    echoesSmsId: true,
  },
  smpp: {
    id: (n) => hex(n, 16).toUpperCase(),
    statuses: { delivered: 'DELIVRD', undelivered: 'UNDELIV', failed: 'REJECTD' },
    errorCodes: ['001', '00B', '045'],
    echoesSmsId: false,
  },
  // The sandbox (providers/sandbox.ts) names its ids sbx-<uuid> and echoes our sms_id.
  sandbox: {
    id: (n) => `sbx-${uuidv4(n)}`,
    statuses: { delivered: 'delivered', undelivered: 'undelivered', failed: 'failed' },
    errorCodes: ['timeout'],
    echoesSmsId: true,
  },
};

const pool = new Uint32Array(16_384);
let drawn = pool.length;
/** A uniform number in [0, 1) from a pool filled by the operating system's generator, refilled in one call. */
function draw(): number {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  return pool[drawn++]! / 4_294_967_296;
}

export interface PrefillRowOptions {
  messages: number;
  /** The first message's time and the last's (epoch ms). */
  from: number;
  to: number;
  /** Provider names, each with its share of the messages; a name's ids are shaped as twilio's, smpp's or (else) the sandbox's. */
  providers: Array<[name: string, share: number]>;
  /** The first activity.id: CRM activity ids are integers that grow with time. */
  firstActivityId?: number;
}

const BRANDS = [
  [3, 'Casino'],
  [7, 'SpinPlace'],
  [11, 'LuckyBet'],
] as const;

/**
 * The rows of messages [start, end): each message with its receipt (a message that ended delivery_unknown got none:
 * the sweep settled it), its posted conversion, the one webhook attempt that posted it, its (player, number) pair and
 * its number's entry.
 * Ids of receipts, conversions and attempts are the message's index + 1.
 */
export function prefillRows(options: PrefillRowOptions, start: number, end: number): PrefillBatch {
  const batch: PrefillBatch = {
    messages: [],
    receipts: [],
    conversions: [],
    conversion_attempts: [],
    message_user_recipients: [],
    recipient_messages: [],
    recipient_messages_recent: [],
    message_user_recipients_recent: [],
    message_keys: [],
    delivery_stats: [],
  };
  const stats = new Map<string, Value[]>();
  // The console's counters (delivery-stats.ts): hour buckets for every message, minute buckets only for the last
  // two days, since the sweep deletes older ones (MINUTE_STATS_RETENTION_MS).
  const count = (at: number, provider: string, outcome: string) => {
    for (const [period, span] of [['hour', 3_600_000] as const, ['minute', 60_000] as const]) {
      if (period === 'minute' && at < options.to - 2 * 86_400_000) continue;
      const bucket = Math.floor(at / span) * span;
      const key = `${period}|${bucket}|${provider}|${outcome}`;
      const row = stats.get(key);
      if (row) (row[4] as number)++;
      else stats.set(key, [period, bucket, provider, outcome, 1]);
    }
  };
  const next = draw;
  const players = prefillPlayers(options.messages);
  const span = Math.max(0, options.to - options.from);
  const total = options.providers.reduce((sum, [, share]) => sum + share, 0);
  const idBase = options.firstActivityId ?? 480_000_000;
  const pairs = new Set<string>();
  // The last message's day is not over: a serving gateway holds its entries by the hour until it is
  // (src/delivery/number-entries.ts), where sends add to them and searches read them.
  const lastDay = bucketAt(options.to);
  for (let i = start; i < end; i++) {
    const createdAt = options.from + Math.floor((i * span) / Math.max(1, options.messages - 1));
    let pick = next() * total;
    const provider = options.providers.find(([, share]) => (pick -= share) < 0)?.[0] ?? options.providers[0]![0];
    const shape = SHAPES[provider] ?? SHAPES.sandbox!;
    const player = Math.floor(next() * players);
    const recipient = numberOf(player, next() < 0.1 ? 1 : 0);
    const { userId } = prefillPlayer(player);
    const [brand, sender] = BRANDS[player % BRANDS.length]!;
    const activityId = idBase + i;
    const smsId = uuidv7At(createdAt, next);
    const providerMessageId = shape.id(next);
    const r = next();
    const status = r < 0.93 ? 'delivered' : r < 0.96 ? 'undelivered' : r < 0.98 ? 'failed' : 'delivery_unknown';
    const submittedAt = createdAt + 80 + Math.floor(next() * 400);
    const completedAt = status === 'delivery_unknown' ? createdAt + 72 * 3_600_000 : submittedAt + 1_000 + Math.floor(next() * 20_000);
    const ucs2 = next() < 0.15;
    const segments = next() < 0.8 ? 1 : 2;
    const activity = `{"id":${activityId},"brand_id":${brand},"user_id":"${userId}","activity_id":${1 + (i % 40)},"action_group_id":${1 + (i % 9)},"trigger_hash":"${hex(next, 16)}","action_id":${1 + (i % 120)}}`;
    const rawStatus = status === 'delivery_unknown' ? 'accepted' : shape.statuses[status];
    const errorCode = status === 'undelivered' || status === 'failed' ? shape.errorCodes[Math.floor(next() * shape.errorCodes.length)]! : null;
    batch.messages.push([
      smsId,
      String(activityId),
      activity,
      userId,
      uuidv4(next),
      provider,
      providerMessageId,
      recipient,
      sender,
      ucs2 ? 'ucs2' : 'gsm7',
      segments,
      'submitted',
      1,
      rawStatus,
      status,
      status === 'delivery_unknown' ? 'timeout' : 'receipt',
      createdAt,
      completedAt,
      createdAt,
      submittedAt,
      completedAt,
      shape.echoesSmsId ? 1 : 0,
    ]);
    const day = bucketAt(createdAt);
    if (day < lastDay) batch.recipient_messages.push([day, recipient, createdAt, smsId]);
    else batch.recipient_messages_recent.push([hourAt(createdAt), recipient, createdAt, smsId]);
    batch.message_keys.push([String(activityId), smsId]);
    const id = i + 1;
    count(submittedAt, provider, 'submitted');
    count(completedAt, provider, status);
    if (status !== 'delivery_unknown') {
      // The intake's dedup key of a matched receipt (receiptDedupKey, src/delivery/apply-receipts.ts): the message is
      // its sms_id, or its clock when found by the provider id.
      const dedupKey = receiptKey(provider, shape.echoesSmsId ? smsId : smsIdClock(smsId), providerMessageId, rawStatus, errorCode ?? '');
      batch.receipts.push([id, provider, dedupKey, smsId, providerMessageId, rawStatus, status, errorCode, 1, completedAt, 0]);
    }
    const postedAt = completedAt + 20 + Math.floor(next() * 500);
    const token = uuidv4(next);
    batch.conversions.push([id, smsId, status, 1, completedAt, completedAt + 30_000, token, postedAt, 0, completedAt, token]);
    batch.conversion_attempts.push([id, id, postedAt, 1, 200]);
    // One row per pair (and hour) and statement, as the send path records them (recordUserRecipients, messages.ts):
    // the last day's by the hour, as a serving gateway holds them until the day is over.
    const byHour = day === lastDay;
    const pair = byHour ? `${hourAt(createdAt)} ${userId} ${recipient}` : `${userId} ${recipient}`;
    if (!pairs.has(pair)) {
      if (byHour) batch.message_user_recipients_recent.push([hourAt(createdAt), userId, recipient]);
      else batch.message_user_recipients.push([userId, recipient]);
    }
    pairs.add(pair);
  }
  batch.delivery_stats = [...stats.values()];
  return batch;
}
