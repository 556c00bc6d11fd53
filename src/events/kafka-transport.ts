/**
 * Publishes events to a Kafka connector of the CRM (docs/events.md, "Kafka"): the event's queue type name in the
 * header `type` (the CRM's rule), the player as the key so one player's events share a partition and keep their
 * order, `acks: -1` and an idempotent producer so a retried produce request is written once. An event counts as
 * sent only when the broker acknowledged it: kafkajs resolves a send only when every partition's produce answer has
 * no error, and with acks -1 a broker answers only once the in-sync replicas hold the batch. A topic the broker
 * lacks is never created (allowAutoTopicCreation false): its events stay owed, counted `notRouted`, and do not hold
 * back the other topics' events of the same round. Partitions without a leader (LEADER_NOT_AVAILABLE in metadata,
 * NOT_LEADER_OR_FOLLOWER on a produce) fail the send or are ridden out by the client's one retry after it asks for
 * metadata again. Sends of one moment are gathered into one produce request.
 * The header `event_id` carries the gateway's id, the same on every attempt, for a consumer that drops repeats.
 */
import type { Producer } from 'kafkajs';
import type { Config } from '../config/schema.js';
import { NOT_ROUTED_ERROR_PREFIX } from '../ledger/events.js';
import { startPublish, TRACING_OFF, type Tracing } from '../observability/tracing.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import type { EventTransport, OutgoingEvent } from './transport.js';

type KafkaConfig = NonNullable<Config['crm']['integration']['kafka']>;

/** Broker errors that no retry can fix: the record itself is refused (Kafka protocol error names, as kafkajs reports them). */
const RECORD_REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'INVALID_RECORD', 'RECORD_LIST_TOO_LARGE', 'INVALID_REQUIRED_ACKS']);

interface Waiting {
  event: OutgoingEvent;
  resolve: (outcome: OutboxOutcome) => void;
}

/**
 * The broker has no such topic (auto-creation is off: allowAutoTopicCreation false). kafkajs asks for the metadata
 * of every topic of a batch at once and fails the whole batch when one is unknown, so one missing topic would hold
 * back every event sent beside it.
 */
const UNKNOWN_TOPIC = 'UNKNOWN_TOPIC_OR_PARTITION';

/** The first Kafka protocol error name among `names` in the error or what caused it (kafkajs wraps them in retries). */
function errorType(error: unknown, names: ReadonlySet<string> = RECORD_REFUSALS): string | undefined {
  for (let e = error as { type?: string; cause?: unknown; originalError?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
    if (e.type && names.has(e.type)) return e.type;
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return undefined;
}

export function createKafkaTransport(config: KafkaConfig, timeoutMs: number, tracing: Tracing = TRACING_OFF): EventTransport {
  let producer: Promise<Producer> | undefined;
  let closed = false;
  let waiting: Waiting[] = [];
  let scheduled = false;

  const connect = (): Promise<Producer> => {
    if (producer) return producer;
    const attempt = (async () => {
      // Loaded on first use: a gateway on HTTP or RabbitMQ never pays for the Kafka client.
      const { Kafka, logLevel, Partitioners } = (await import('kafkajs')).default;
      const kafka = new Kafka({
        clientId: config.client_id,
        brokers: config.brokers,
        ssl: config.ssl,
        ...(config.sasl ? { sasl: config.sasl as never } : {}),
        connectionTimeout: timeoutMs,
        requestTimeout: timeoutMs,
        enforceRequestTimeout: true,
        // The event outbox backs off and retries; the client only rides out a short blip within one send (the idempotent
        // producer needs at least one retry of its own).
        retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 300 },
        logLevel: logLevel.NOTHING,
      });
      // Idempotent: a produce retried by the client is written once; it implies one request in flight per broker.
      const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
      await p.connect();
      return p;
    })();
    producer = attempt;
    attempt.catch(() => {
      if (producer === attempt) producer = undefined;
    });
    return attempt;
  };

  /** Drops the producer (a send that outlived every bound of the client), so the next send starts afresh. */
  const reset = (failed: Promise<Producer> | undefined) => {
    if (!failed || producer !== failed) return;
    producer = undefined;
    failed.then((p) => p.disconnect()).catch(() => {});
  };

  /**
   * A send is awaited until the client itself gives up (its request timeout and one retry bound it), never
   * abandoned while the client may still write it: an abandoned send that landed later would double the event once
   * the event outbox sent it again. The producer is kept across failures, so a batch sent again carries the same producer
   * id and sequence numbers and a broker that did write the first one drops the repeat. Only a send that outlives
   * the client's own bound by far (GUARD) drops the producer.
   */
  const publish = async (batch: Waiting[]): Promise<void> => {
    // With tracing on, one PRODUCER span for the batch, its context in every record's headers (docs/tracing.md).
    const topics = [...new Set(batch.map(({ event }) => event.topic ?? config.topic))];
    const published = startPublish(tracing, {
      system: 'kafka',
      destination: topics.join(','),
      messageIds: batch.map(({ event }) => event.event_id),
      causes: batch.map(({ event }) => event.traceparent),
    });
    const byTopic = new Map<string, Array<{ key: string; value: string; headers: Record<string, string> }>>();
    for (const { event } of batch) {
      const topic = event.topic ?? config.topic;
      if (!byTopic.has(topic)) byTopic.set(topic, []);
      byTopic
        .get(topic)!
        .push({ key: event.user_id, value: event.payload_json, headers: { type: event.type, event_id: event.event_id, ...published.headers } });
    }
    const current = connect();
    try {
      await withTimeout(
        current.then((p) => p.sendBatch({ acks: -1, timeout: timeoutMs, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) })),
        kafkaSendGuardMs(timeoutMs),
        `no acknowledgement within ${kafkaSendGuardMs(timeoutMs)} ms`,
        () => reset(current),
      );
      published.done({ ok: true });
      for (const w of batch) w.resolve({ ok: true, status: null });
    } catch (error) {
      published.done({ ok: false, error: `Kafka: ${(error as Error).message}` });
      const refused = errorType(error);
      if (refused && batch.length > 1) {
        // One refused record fails its whole request: send each alone so only the refused one is dead-lettered.
        for (const w of batch) await publish([w]);
        return;
      }
      if (errorType(error, new Set([UNKNOWN_TOPIC]))) {
        if (byTopic.size > 1) {
          // Each topic on its own: the events of topics that exist go out now, the others stay owed.
          for (const topic of byTopic.keys()) await publish(batch.filter((w) => (w.event.topic ?? config.topic) === topic));
          return;
        }
        const [topic] = byTopic.keys();
        const message = `${NOT_ROUTED_ERROR_PREFIX}Kafka: the broker has no topic ${JSON.stringify(topic)} (${UNKNOWN_TOPIC}); it is not created by the gateway`;
        for (const w of batch) w.resolve({ ok: false, status: null, error: message, notRouted: true });
        return;
      }
      const message = `Kafka: ${(error as Error).message}`;
      for (const w of batch) w.resolve({ ok: false, status: null, error: message, ...(refused ? { permanent: true } : {}) });
    }
  };

  const flush = () => {
    scheduled = false;
    const batch = waiting;
    waiting = [];
    if (batch.length > 0) void publish(batch);
  };

  const target = `kafka://${config.brokers[0] ?? ''}/${config.topic}`;
  return {
    target,
    send(event): Promise<OutboxOutcome> {
      if (closed) return Promise.resolve({ ok: false, status: null, error: 'transport closed' });
      return new Promise<OutboxOutcome>((resolve) => {
        waiting.push({ event, resolve });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    abort() {
      // Unacknowledged sends fail when the producer disconnects; the event outbox backs them off.
      reset(producer);
    },
    async close() {
      closed = true;
      const current = producer;
      producer = undefined;
      if (!current) return;
      try {
        await (await current).disconnect();
      } catch {
        // Never connected or already gone: nothing to release.
      }
    },
  };
}

/**
 * How long a Kafka send may take before it is given up: the client's own bound (connect, then a request and one
 * retry, each within crm.integration.timeout) with room to spare. relay.lease must outlast it (src/config/schema.ts).
 */
export function kafkaSendGuardMs(timeoutMs: number): number {
  return 3 * timeoutMs + 1_000;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        onTimeout();
        reject(new Error(message));
      }, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
