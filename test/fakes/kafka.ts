/**
 * A fake Kafka broker: one node that speaks the Kafka wire protocol over TCP, the way test/fakes/smpp.ts speaks
 * SMPP. It implements what an idempotent producer needs and no more: ApiVersions (v0–v2), Metadata (v1, which
 * names the controller), InitProducerId (v0) and Produce (v3, record batches of magic 2). Each batch's CRC32C is
 * checked, its records and headers are decoded and kept in `records`, and the producer id and sequence numbers are
 * checked as a broker does for an idempotent producer: a batch sent again (same first sequence and size as one of
 * the last five) is acknowledged without being appended, any other unexpected sequence is refused with
 * OUT_OF_ORDER_SEQUENCE_NUMBER. It can refuse produce requests with an error code, stall
 * (read them and never answer), drop every connection, and stop listening. A topic not in `topics` is answered
 * UNKNOWN_TOPIC_OR_PARTITION (in Metadata and Produce, as a broker with auto-creation off does; adding it later
 * creates it); a topic in `leaderless` has partitions with no leader (Metadata: LEADER_NOT_AVAILABLE, leader -1,
 * as during an election or a topic's creation; Produce: NOT_LEADER_OR_FOLLOWER).
 *
 * The versions offered are ones kafkajs implements (node_modules/kafkajs/src/protocol/requests/*), so it
 * negotiates exactly these.
 */
import { createServer, type Server, type Socket } from 'node:net';

const API = { Produce: 0, Metadata: 3, ApiVersions: 18, InitProducerId: 22 } as const;
const OFFERED: Array<[number, number, number]> = [
  [API.Produce, 3, 3],
  [API.Metadata, 1, 1],
  [API.ApiVersions, 0, 2],
  [API.InitProducerId, 0, 0],
];

/** Kafka protocol error codes used here. */
export const KafkaError = {
  NONE: 0,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  NOT_LEADER_OR_FOLLOWER: 6,
  MESSAGE_TOO_LARGE: 10,
  NOT_ENOUGH_REPLICAS: 19,
  UNSUPPORTED_VERSION: 35,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
} as const;

export interface KafkaRecord {
  topic: string;
  partition: number;
  offset: number;
  key: string | null;
  value: string | null;
  headers: Record<string, string>;
  producerId: bigint;
  sequence: number;
  acks: number;
}

// ---- CRC32C (Castagnoli), as record batches of magic 2 carry it ----
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(buf: Buffer): number {
  let crc = 0xffffffff;
  for (let i = 0; i < buf.length; i++) crc = CRC_TABLE[(crc ^ buf[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

class Reader {
  constructor(
    private readonly buf: Buffer,
    public pos = 0,
  ) {}
  int8() {
    return this.buf.readInt8((this.pos += 1) - 1);
  }
  int16() {
    return this.buf.readInt16BE((this.pos += 2) - 2);
  }
  int32() {
    return this.buf.readInt32BE((this.pos += 4) - 4);
  }
  uint32() {
    return this.buf.readUInt32BE((this.pos += 4) - 4);
  }
  int64() {
    return this.buf.readBigInt64BE((this.pos += 8) - 8);
  }
  string(): string | null {
    const len = this.int16();
    if (len < 0) return null;
    return this.buf.toString('utf8', this.pos, (this.pos += len));
  }
  bytes(): Buffer | null {
    const len = this.int32();
    if (len < 0) return null;
    return this.buf.subarray(this.pos, (this.pos += len));
  }
  array<T>(read: () => T): T[] | null {
    const n = this.int32();
    if (n < 0) return null;
    return Array.from({ length: n }, read);
  }
  /** Unsigned LEB128 then zigzag, as record fields are written. */
  varint(): number {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7n;
    }
    return Number((result >> 1n) ^ -(result & 1n));
  }
  varBytes(): Buffer | null {
    const len = this.varint();
    if (len < 0) return null;
    return this.buf.subarray(this.pos, (this.pos += len));
  }
}

class Writer {
  private parts: Buffer[] = [];
  int8(v: number) {
    const b = Buffer.alloc(1);
    b.writeInt8(v);
    this.parts.push(b);
    return this;
  }
  int16(v: number) {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.parts.push(b);
    return this;
  }
  int32(v: number) {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  int64(v: bigint) {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(v);
    this.parts.push(b);
    return this;
  }
  string(v: string | null) {
    if (v === null) return this.int16(-1);
    const b = Buffer.from(v);
    this.int16(b.length);
    this.parts.push(b);
    return this;
  }
  array<T>(items: T[], write: (w: Writer, item: T) => void) {
    this.int32(items.length);
    for (const item of items) write(this, item);
    return this;
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

interface PendingProduce {
  socket: Socket;
  correlationId: number;
  acks: number;
  topics: Array<{ topic: string; partitions: Array<{ partition: number; batch: Buffer | null }> }>;
}

export class FakeKafkaBroker {
  /** Appended records, in the order the broker wrote them. */
  readonly records: KafkaRecord[] = [];
  /** Produce requests read (answered or not). */
  produceRequests = 0;
  /** Batches acknowledged without being appended (the same producer id and sequence again). */
  duplicatesDropped = 0;
  /** Answer every produce with this error code (until set back to undefined). */
  refuseProduce: number | undefined;
  /** Read produce requests and never answer them. */
  stall = false;
  readonly stalled: PendingProduce[] = [];
  /** Topics whose partitions have no leader now (an election in progress). */
  readonly leaderless = new Set<string>();
  /** Metadata requests answered, with the topics they asked about (null: all). */
  readonly metadataRequests: Array<string[] | null> = [];
  /** Producer ids handed out by InitProducerId. */
  readonly producerIds: bigint[] = [];
  private refusals: number[] = [];
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private nextProducerId = 1000n;
  private readonly offsets = new Map<string, number>();
  private readonly sequences = new Map<string, number>();
  private readonly recentBatches = new Map<string, Array<{ baseSequence: number; count: number; offset: number }>>();
  port = 0;

  /** Topic name → partition count. A topic not listed is unknown (UNKNOWN_TOPIC_OR_PARTITION). */
  constructor(readonly topics: Record<string, number>) {}

  get broker(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Refuse the next `count` produce requests with `code`. */
  refuseNext(count: number, code: number): void {
    for (let i = 0; i < count; i++) this.refusals.push(code);
  }

  /** Records of one topic with a header value, in offset order per partition. */
  recordsWithHeader(name: string, value: string): KafkaRecord[] {
    return this.records.filter((r) => r.headers[name] === value);
  }

  /** Cuts every open connection (a broker restart or a network fault); the port stays open. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    this.stalled.length = 0;
  }

  async start(): Promise<this> {
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    return this;
  }

  /** Stops listening and drops every connection; start() again listens on the same port. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.dropConnections();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4) {
        const size = buffered.readInt32BE(0);
        if (buffered.length < 4 + size) break;
        const frame = buffered.subarray(4, 4 + size);
        buffered = buffered.subarray(4 + size);
        try {
          this.handle(socket, frame);
        } catch {
          // A frame this fake cannot read: a real broker closes the connection too.
          socket.destroy();
          return;
        }
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => this.sockets.delete(socket));
  }

  private reply(socket: Socket, correlationId: number, body: Buffer): void {
    const header = Buffer.alloc(8);
    header.writeInt32BE(4 + body.length, 0);
    header.writeInt32BE(correlationId, 4);
    if (!socket.destroyed) socket.write(Buffer.concat([header, body]));
  }

  private handle(socket: Socket, frame: Buffer): void {
    const r = new Reader(frame);
    const apiKey = r.int16();
    const apiVersion = r.int16();
    const correlationId = r.int32();
    r.string(); // client id
    const offered = OFFERED.find(([key]) => key === apiKey);
    if (apiKey === API.ApiVersions) {
      // An unknown ApiVersions version is answered in v0 with UNSUPPORTED_VERSION, so the client tries a lower one.
      const supported = apiVersion <= 2;
      const w = new Writer()
        .int16(supported ? KafkaError.NONE : KafkaError.UNSUPPORTED_VERSION)
        .array(OFFERED, (w, [key, min, max]) => w.int16(key).int16(min).int16(max));
      if (supported && apiVersion >= 1) w.int32(0);
      return this.reply(socket, correlationId, w.done());
    }
    if (!offered || apiVersion < offered[1] || apiVersion > offered[2]) {
      socket.destroy();
      return;
    }
    if (apiKey === API.Metadata) return this.reply(socket, correlationId, this.metadata(r));
    if (apiKey === API.InitProducerId) {
      const id = this.nextProducerId++;
      this.producerIds.push(id);
      return this.reply(socket, correlationId, new Writer().int32(0).int16(KafkaError.NONE).int64(id).int16(0).done());
    }
    this.produce(socket, correlationId, r);
  }

  private metadata(r: Reader): Buffer {
    const asked = r.array(() => r.string()!);
    this.metadataRequests.push(asked);
    const names = asked ?? Object.keys(this.topics);
    return new Writer()
      .array([0], (w) => w.int32(0).string('127.0.0.1').int32(this.port).string(null))
      .int32(0)
      .array(names, (w, name) => {
        const partitions = this.topics[name];
        w.int16(partitions === undefined ? KafkaError.UNKNOWN_TOPIC_OR_PARTITION : KafkaError.NONE)
          .string(name)
          .int8(0)
          .array(
            Array.from({ length: partitions ?? 0 }, (_, i) => i),
            (w, p) =>
              this.leaderless.has(name)
                ? w
                    .int16(KafkaError.LEADER_NOT_AVAILABLE)
                    .int32(p)
                    .int32(-1)
                    .array([0], (w) => w.int32(0))
                    .array([], () => {})
                : w
                    .int16(KafkaError.NONE)
                    .int32(p)
                    .int32(0)
                    .array([0], (w) => w.int32(0))
                    .array([0], (w) => w.int32(0)),
          );
      })
      .done();
  }

  private produce(socket: Socket, correlationId: number, r: Reader): void {
    this.produceRequests++;
    r.string(); // transactional id
    const acks = r.int16();
    r.int32(); // timeout
    const topics = r.array(() => ({ topic: r.string()!, partitions: r.array(() => ({ partition: r.int32(), batch: r.bytes() })) ?? [] })) ?? [];
    if (this.stall) {
      this.stalled.push({ socket, correlationId, acks, topics });
      return;
    }
    this.answerProduce(socket, correlationId, acks, topics);
  }

  /**
   * Writes the produce requests held while stalled, late, as a slow broker does, and answers them on their
   * connections (a client that gave up on them ignores the answers).
   */
  writeStalled(): void {
    const held = this.stalled.splice(0);
    for (const p of held) this.answerProduce(p.socket, p.correlationId, p.acks, p.topics);
  }

  private answerProduce(socket: Socket, correlationId: number, acks: number, topics: PendingProduce['topics']): void {
    const refusal = this.refusals.shift() ?? this.refuseProduce;
    const answers = topics.map(({ topic, partitions }) => ({
      topic,
      partitions: partitions.map(({ partition, batch }) => {
        if (refusal !== undefined) return { partition, error: refusal, offset: -1n };
        if (this.topics[topic] === undefined || partition >= this.topics[topic]!)
          return { partition, error: KafkaError.UNKNOWN_TOPIC_OR_PARTITION, offset: -1n };
        if (this.leaderless.has(topic)) return { partition, error: KafkaError.NOT_LEADER_OR_FOLLOWER, offset: -1n };
        return { partition, ...this.append(topic, partition, batch!, acks) };
      }),
    }));
    if (acks === 0) return;
    const body = new Writer()
      .array(answers, (w, t) => w.string(t.topic).array(t.partitions, (w, p) => w.int32(p.partition).int16(p.error).int64(p.offset).int64(-1n)))
      .int32(0)
      .done();
    this.reply(socket, correlationId, body);
  }

  private append(topic: string, partition: number, batch: Buffer, acks: number): { error: number; offset: bigint } {
    const r = new Reader(batch);
    r.int64(); // base offset (the broker assigns it)
    r.int32(); // batch length
    r.int32(); // partition leader epoch
    const magic = r.int8();
    const crc = r.uint32();
    if (magic !== 2 || crc32c(batch.subarray(r.pos)) !== crc) return { error: KafkaError.CORRUPT_MESSAGE, offset: -1n };
    const attributes = r.int16();
    if ((attributes & 0x07) !== 0) return { error: KafkaError.CORRUPT_MESSAGE, offset: -1n }; // compressed: not spoken here
    r.int32(); // last offset delta
    r.int64(); // first timestamp
    r.int64(); // max timestamp
    const producerId = r.int64();
    r.int16(); // producer epoch
    const baseSequence = r.int32();
    const count = r.int32();
    const at = `${topic}/${partition}`;
    // The idempotent producer's rule: each producer's batches on a partition come with consecutive sequences.
    if (producerId >= 0n) {
      const key = `${producerId}/${at}`;
      const expected = this.sequences.get(key) ?? 0;
      // A repeat is a batch with the same first sequence and size as one of the last five written (as a broker
      // keeps them); any other sequence than the next expected one is refused, never silently dropped.
      const recent = this.recentBatches.get(key) ?? [];
      const repeat = recent.find((b) => b.baseSequence === baseSequence && b.count === count);
      if (repeat) {
        this.duplicatesDropped++;
        return { error: KafkaError.NONE, offset: BigInt(repeat.offset) };
      }
      if (baseSequence !== expected) return { error: KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, offset: -1n };
      this.sequences.set(key, expected + count);
      this.recentBatches.set(key, [...recent, { baseSequence, count, offset: this.offsets.get(at) ?? 0 }].slice(-5));
    }
    const base = this.offsets.get(at) ?? 0;
    for (let i = 0; i < count; i++) {
      r.varint(); // record length
      r.int8(); // record attributes
      r.varint(); // timestamp delta
      const offsetDelta = r.varint();
      const key = r.varBytes();
      const value = r.varBytes();
      const headers: Record<string, string> = {};
      const headerCount = r.varint();
      for (let h = 0; h < headerCount; h++) {
        const name = r.varBytes()!.toString('utf8');
        headers[name] = r.varBytes()?.toString('utf8') ?? '';
      }
      this.records.push({
        topic,
        partition,
        offset: base + offsetDelta,
        key: key?.toString('utf8') ?? null,
        value: value?.toString('utf8') ?? null,
        headers,
        producerId,
        sequence: baseSequence + i,
        acks,
      });
    }
    this.offsets.set(at, base + count);
    return { error: KafkaError.NONE, offset: BigInt(base) };
  }
}
