/**
 * Publishes events to a RabbitMQ connector of the CRM (docs/crm-interface.md §7: the event name goes in the message
 * property `type`; headers are ignored). Messages are persistent, `mandatory`, and published on a confirm channel:
 * an event counts as sent only once the broker confirmed it (amqplib's ConfirmChannel) AND did not return it. A
 * broker confirms a message it could route to no queue too (an exchange with nothing bound for the routing key):
 * with `mandatory` it first sends the message back (basic.return, 312 NO_ROUTE), on the same channel and before the
 * confirm, and amqplib emits 'return' before it runs the publish's confirm callback. Each publish carries its own id
 * (header `publish_id`), so a return is matched to its publish, never guessed from order. A returned event is not
 * sent: it backs off and is retried like a refused POST (docs/relay.md). The connection is opened on first use and
 * again after it fails; a send while it is down fails and is retried by the event outbox like an HTTP refusal.
 */
import { randomUUID } from 'node:crypto';
import type { ChannelModel, ConfirmChannel, Message } from 'amqplib';
import type { Config } from '../config/schema.js';
import { NOT_ROUTED_ERROR_PREFIX } from '../ledger/events.js';
import { startPublish, TRACING_OFF, type Tracing } from '../observability/tracing.js';
import type { OutboxOutcome } from '../outbox/outcome.js';
import type { EventTransport } from './transport.js';

type RabbitConfig = NonNullable<Config['crm']['integration']['rabbitmq']>;

/** The header that names one publish (one attempt of one event), for matching a basic.return to it. */
export const PUBLISH_ID_HEADER = 'publish_id';

/** What a returned message's frame says, as the event's error: the broker's reply code and text, and where it went. */
export function notRoutedError(fields: { replyCode?: number; replyText?: string; exchange?: string; routingKey?: string }): string {
  return (
    `${NOT_ROUTED_ERROR_PREFIX}RabbitMQ returned it (${fields.replyCode ?? '?'} ${fields.replyText ?? ''}): ` +
    `no queue is bound to exchange ${JSON.stringify(fields.exchange ?? '')} for routing key ${JSON.stringify(fields.routingKey ?? '')}`
  );
}

export function createRabbitMqTransport(config: RabbitConfig, timeoutMs: number, tracing: Tracing = TRACING_OFF): EventTransport {
  let opening: Promise<Link> | undefined;
  let closed = false;
  // Publish ids are this transport's prefix and a counter: unique per publish, cheap, never reused by a restart.
  const prefix = randomUUID();
  let publishes = 0;

  type Link = { connection: ChannelModel; channel: ConfirmChannel; returned: Map<string, string | undefined> };
  /**
   * The open link, or one being opened. A connect or handshake that takes longer than the timeout is given up (its
   * connection closed if it still arrives), so a send never waits on it for ever; each reset forgets only its own link.
   */
  const open = (): Promise<Link> => {
    if (opening) return opening;
    let forget = () => {};
    const attempt: Promise<Link> = (async () => {
      // Loaded on first use: a gateway sending over HTTP (or not at all) never pays for the AMQP client.
      const amqp = (await import('amqplib')).default;
      const connection = await amqp.connect(config.url, { timeout: timeoutMs });
      const channel = await connection.createConfirmChannel();
      // Publishes in flight on this channel, by publish id; a return sets its error before the confirm is read.
      const returned = new Map<string, string | undefined>();
      channel.on('return', (message: Message) => {
        const id = message.properties.headers?.[PUBLISH_ID_HEADER];
        if (typeof id === 'string' && returned.has(id)) returned.set(id, notRoutedError(message.fields as never));
      });
      // A broker restart or a refused publish (e.g. no such exchange) closes the channel or the connection: drop
      // both and open anew on the next send, so no half-closed connection is left behind.
      let dropped = false;
      const reset = () => {
        if (dropped) return;
        dropped = true;
        forget();
        connection.close().catch(() => {});
      };
      connection.on('error', reset);
      connection.on('close', reset);
      channel.on('error', reset);
      channel.on('close', reset);
      return { connection, channel, returned };
    })();
    forget = () => {
      if (opening === guarded) opening = undefined;
    };
    let timer: NodeJS.Timeout | undefined;
    const guarded: Promise<Link> = Promise.race([
      attempt,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`no connection within ${timeoutMs} ms`));
          attempt.then(
            (late) => late.connection.close().catch(() => {}),
            () => {},
          );
        }, timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
    opening = guarded;
    guarded.catch(forget);
    return guarded;
  };

  const host = (() => {
    try {
      return new URL(config.url).host;
    } catch {
      return 'rabbitmq';
    }
  })();

  return {
    target: `amqp://${host}/${config.exchange}`,
    async send(event): Promise<OutboxOutcome> {
      if (closed) return { ok: false, status: null, error: 'transport closed' };
      // With tracing on, a PRODUCER span whose context goes in the message's headers (docs/tracing.md).
      const published = startPublish(tracing, { system: 'rabbitmq', destination: config.exchange, messageIds: [event.event_id], causes: [event.traceparent] });
      try {
        const { channel, returned } = await open();
        const publishId = `${prefix}/${++publishes}`;
        returned.set(publishId, undefined);
        try {
          await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no confirm within ${timeoutMs} ms`)), timeoutMs);
            channel.publish(
              config.exchange,
              config.routing_key,
              Buffer.from(event.payload_json),
              {
                persistent: true,
                mandatory: true,
                type: event.type,
                contentType: 'application/json',
                messageId: event.event_id,
                headers: { ...published.headers, [PUBLISH_ID_HEADER]: publishId },
              },
              (error) => {
                clearTimeout(timer);
                if (error) reject(error instanceof Error ? error : new Error('the broker refused the message'));
                else resolve();
              },
            );
          });
          const notRouted = returned.get(publishId);
          // Confirmed but returned: the broker holds it in no queue. Not sent; retried like a refused POST.
          if (notRouted) return published.done({ ok: false, status: null, error: notRouted, notRouted: true });
        } finally {
          returned.delete(publishId);
        }
        return published.done({ ok: true, status: null });
      } catch (error) {
        return published.done({ ok: false, status: null, error: `RabbitMQ: ${(error as Error).message}` });
      }
    },
    abort() {
      // Unconfirmed publishes fail when the connection goes; the event outbox backs them off.
      void this.close();
    },
    async close() {
      closed = true;
      const current = opening;
      opening = undefined;
      if (!current) return;
      try {
        const { connection } = await current;
        await connection.close();
      } catch {
        // Already closed or never opened: nothing to release.
      }
    },
  };
}
