/**
 * Publishes events to a RabbitMQ connector of the CRM (docs/crm-interface.md §7: the event name goes in the message
 * property `type`; headers are ignored). Messages are persistent and published on a confirm channel: an event
 * counts as sent only once the broker confirmed it (amqplib's ConfirmChannel). The connection is opened on first
 * use and again after it fails; a send while it is down fails and is retried by the event outbox like an HTTP refusal.
 */
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { Config } from '../config/schema.js';
import type { EventTransport, TransportOutcome } from './transport.js';

type RabbitConfig = NonNullable<Config['crm']['integration']['rabbitmq']>;

export function createRabbitMqTransport(config: RabbitConfig, timeoutMs: number): EventTransport {
  let opening: Promise<{ connection: ChannelModel; channel: ConfirmChannel }> | undefined;
  let closed = false;

  type Link = { connection: ChannelModel; channel: ConfirmChannel };
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
      return { connection, channel };
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
    async send(event): Promise<TransportOutcome> {
      if (closed) return { ok: false, status: null, error: 'transport closed' };
      try {
        const { channel } = await open();
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no confirm within ${timeoutMs} ms`)), timeoutMs);
          channel.publish(
            config.exchange,
            config.routing_key,
            Buffer.from(event.payload_json),
            { persistent: true, type: event.type, contentType: 'application/json', messageId: event.event_id },
            (error) => {
              clearTimeout(timer);
              if (error) reject(error instanceof Error ? error : new Error('the broker refused the message'));
              else resolve();
            },
          );
        });
        return { ok: true, status: null };
      } catch (error) {
        return { ok: false, status: null, error: `RabbitMQ: ${(error as Error).message}` };
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
