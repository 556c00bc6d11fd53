/**
 * The config.yaml schema (docs/design.md §3). Every object is strict, so an unknown or misspelt key stops the start
 * with its path; defaults make the shipped config.yaml runnable with no account anywhere.
 */
import { z } from 'zod';
import { providerPlugins } from '../../providers/index.js';
import { checkCheapestDelivering, checkFailoverRouteMembers, failoverRouteConfigSchema } from './failover-route-config.js';
import { routingSchema } from './route-rules-config.js';
import { checkRouteRules } from './route-rules-checks.js';
import { countriesOfCallingCode } from '../kit/phone-number.js';
import { durationSchema } from '../kit/duration.js';
import { costsConfigSchema } from './costs-config.js';
import { quietHoursConfigSchema } from './quiet-hours-config.js';
import { addressOrBlock } from '../kit/address-blocks.js';
import { EVENT_KINDS, resolveCatalogue, routeClashes, type EventKind } from '../crm/event-catalogue.js';

const duration = (fallback: string) => durationSchema(fallback);

const [firstPlugin, ...otherPlugins] = Object.values(providerPlugins).map((p) => p.configSchema);
// `route` is not a plugin but a provider_name over several of them (src/provider-wrappers/failover-route.ts).
const providerConfig = z.discriminatedUnion('type', [firstPlugin!, ...otherPlugins, failoverRouteConfigSchema]);

/** A keyword list, or lists per language (`{en: [STOP], es: [BAJA]}`), read as one upper-case list. */
const keywordLists = (fallback: string[]) => {
  const words = z.array(z.string().trim().min(1, 'keywords must not be empty')).min(1, 'list at least one keyword');
  return z
    .union([words, z.record(z.string(), words)])
    .default(fallback)
    .transform((v) => [...new Set((Array.isArray(v) ? v : Object.values(v).flat()).map((w) => w.toUpperCase()))]);
};

const server = z
  .strictObject({
    environment: z
      .enum(['production', 'development'])
      .default('production')
      .describe(
        '`production` refuses to start (exit 78) on the unsafe settings of docs/security.md; `development` starts and warns once for each. ' +
          'Absent from the file: the GATEWAY_ENV variable, else `production`. The shipped config.yaml sets `${GATEWAY_ENV:-development}`, the Docker image GATEWAY_ENV=production.',
      ),
    host: z.string().default('0.0.0.0').describe('The address to listen on.'),
    port: z.number().int().min(0).max(65_535).default(8080).describe('The port to listen on; 0 takes any free port.'),
    public_url: z
      .url()
      .optional()
      .describe(
        'Base of the receipt URLs handed to providers: it must be the address providers reach, since their signatures are checked against it. Unset: the address the gateway listens on, `http://{server.host}:{port}` with the port it got (127.0.0.1 for a host of 0.0.0.0 or ::), so a local sandbox follows PORT.',
      ),
    body_limit_bytes: z
      .number()
      .int()
      .positive()
      .default(5 * 1024 * 1024)
      .describe('Largest request body; a larger one is answered 413.'),
    callback_body_limit: z
      .number()
      .int()
      .positive()
      .default(64 * 1024)
      .describe(
        'Largest body of `/dlr/*`, `/mo/*` and the two sign-ins (`/console/login`, `/oauth/token`), which anyone can reach; checked while the body arrives, so a larger one is answered 413 before it is read (docs/public-doors.md).',
      ),
    // At most 1,000: well below where JSON.stringify of a stored activity would overflow the stack.
    max_json_depth: z
      .number()
      .int()
      .min(2)
      .max(1_000)
      .default(64)
      .describe(
        'JSON bodies (and JSON receipts) nesting deeper are refused as they are read, before anything walks them: a single message gets 400 naming the field, a batch entry is answered `failed` while the others go on.',
      ),
    shutdown_timeout: duration('8s').describe(
      'On SIGTERM/SIGINT the gateway stops handing messages to providers, stops accepting, finishes open requests and closes the ledger; provider calls unanswered at half this time are abandoned (their messages left `uncertain`, answered `fatal` / 503). ' +
        'Past this it logs the step it was in and exits 1. 8 s stays under the 10 s Docker waits before SIGKILL: raise both together.',
    ),
    request_timeout: duration('30s').describe(
      'Longest a client may take to send a whole request (headers and body); a slower one gets 408 and its connection is closed. The answer may take longer (a batch has `sms.batch_deadline`).',
    ),
    headers_timeout: duration('20s').describe(
      'Longest a client may take to send the request headers; at most `server.request_timeout`. Deadlines are checked every half of the shorter one, so a client is cut off between 1× and 1.5× its timeout.',
    ),
    keep_alive_timeout: duration('65s').describe(
      'How long an idle keep-alive connection waits for the next request. Longer than the 60 s idle timeout of common clients and load balancers so that they close first: ' +
        'when the server closes first, a request written at that moment is reset (ECONNRESET) and a POST is not retried.',
    ),
    max_connections: z.number().int().positive().default(10_000).describe('Open connections per gateway process; more are closed at once.'),
    trusted_proxies: z
      .array(addressOrBlock)
      .default([])
      .describe(
        'Load balancers and proxies (addresses or CIDR blocks) whose X-Forwarded-For is believed: their requests count under the rightmost forwarded address not itself listed (docs/trust.md). Empty: the TCP peer is the client.',
      ),
    instance_heartbeat: durationSchema('1s', { positive: true }).describe(
      "How often each process records in the ledger that it is alive and counts the live ones, so that providers' `rate_per_second` and `max_concurrency` are split among the instances on one database (docs/shared-limits.md).",
    ),
    instance_expiry: durationSchema('5s', { positive: true }).describe(
      'A process whose last heartbeat is older no longer counts as live, and its share goes to the others; longer than `server.instance_heartbeat`.',
    ),
  })
  .superRefine((s, ctx) => {
    if (s.instance_expiry <= s.instance_heartbeat) {
      ctx.addIssue({ code: 'custom', path: ['instance_expiry'], message: 'must be longer than server.instance_heartbeat' });
    }
    // Node refuses a headers timeout longer than the request timeout it is part of.
    if (s.request_timeout > 0 && s.headers_timeout > s.request_timeout) {
      ctx.addIssue({ code: 'custom', path: ['headers_timeout'], message: 'must not be longer than server.request_timeout' });
    }
  })
  .describe('The HTTP listener, its bounds, and the instance heartbeat.');

const database = z
  .strictObject({
    url: z
      .string()
      .default('sqlite:./data/gateway.db')
      .refine((u) => /^(sqlite:|postgres(ql)?:\/\/)/.test(u), 'must start with sqlite: or postgres://')
      .describe('`sqlite:PATH`, or `postgres://…` for several instances on one database.'),
    sqlite_synchronous: z
      .enum(['normal', 'full'])
      .default('normal')
      .describe("SQLite's `synchronous` pragma: `normal` survives a process crash, `full` a power loss too, at a cost per commit."),
    pool_size: z.number().int().positive().default(10).describe('PostgreSQL connections per process.'),
    layout: z
      .enum(['by_day', 'flat'])
      .default('by_day')
      .describe(
        'PostgreSQL 15 or later: how a new ledger keeps its messages and receipts. `by_day`: a table per UTC day, which retention drops whole; `flat`: one table each, which retention deletes from row by row. Read only when the first migration makes the ledger; a ledger keeps its layout, and `crm-sms-gateway partition` converts a flat one (docs/deployment.md "Partitioning by day"). SQLite has one table each.',
      ),
    prepared_statements: z
      .boolean()
      .default(true)
      .describe(
        "PostgreSQL: send the statements that cost more to plan than to run (the event relay's claim and its decisions) as named prepared statements, parsed once per connection and planned once where a generic plan is as good. Turn off behind a pooler in transaction mode that does not keep them for the session (PgBouncer, unless 1.21 or later with `max_prepared_statements` set).",
      ),
  })
  .describe('The ledger: every message, receipt, conversion and event is committed here before it is acknowledged.');

const auth = z
  .strictObject({
    mode: z.enum(['api_key', 'basic', 'oauth']).default('api_key').describe('How the CRM authenticates on the operator endpoints.'),
    api_keys: z
      .array(z.string().min(1))
      .default([])
      .describe('Keys the CRM sends as `X-Api-Key`; several allow rotation. Required when `auth.mode` is `api_key`.'),
    basic: z
      .strictObject({
        username: z.string().min(1).describe('The user name the CRM sends.'),
        password: z.string().min(1).describe('The password the CRM sends.'),
      })
      .optional()
      .describe('Required when `auth.mode` is `basic`.'),
    oauth: z
      .strictObject({
        client_id: z.string().min(1).describe('The client id the CRM sends to `/oauth/token`.'),
        client_secret: z.string().min(1).describe('Its secret (production wants at least 32 characters).'),
        token_ttl_seconds: z.number().int().positive().default(3600).describe('Lifetime of an access token.'),
        signing_secret: z
          .string()
          .min(16, 'must be at least 16 characters')
          .optional()
          .describe(
            'HMAC key of the access tokens, never derived from `client_secret`. Unset: a random key per process, so tokens end with a restart and the CRM fetches a new one after its 401. ' +
              'Instances sharing a PostgreSQL database need the same one; production refuses to start without it there.',
          ),
      })
      .optional()
      .describe('Required when `auth.mode` is `oauth`.'),
    failure_budget: z
      .number()
      .int()
      .min(0)
      .default(20)
      .describe(
        'Failed authentications (any 401) one client address may make per `auth.failure_window`; past it, that address gets 429 (the single send 503) with Retry-After until its window ends. Failed signatures at `/dlr/*` and `/mo/*` are counted the same way, in a window of their own (docs/trust.md, "Forged callbacks"). 0: no limit (docs/security.md).',
      ),
    failure_window: duration('1m').describe('The window of `auth.failure_budget`.'),
    trusted_addresses: z
      .array(addressOrBlock)
      .default([])
      .describe("The CRM's egress addresses or CIDR blocks: never counted nor refused by the failure limit (docs/trust.md)."),
  })
  .superRefine((a, ctx) => {
    if (a.mode === 'basic' && !a.basic) ctx.addIssue({ code: 'custom', path: ['basic'], message: 'required when auth.mode is basic' });
    if (a.mode === 'oauth' && !a.oauth) ctx.addIssue({ code: 'custom', path: ['oauth'], message: 'required when auth.mode is oauth' });
  })
  .describe('The CRM\'s credentials on the operator endpoints (README.md, "Connecting the CRM").');

const sms = z
  .strictObject({
    api_keys: z
      .array(z.string().min(1))
      .optional()
      .describe('Keys the CRM sends as `X-Api-Key` on `/channels/sms/*`, whatever `auth.mode`; unset: `auth.api_keys`. Several allow rotation.'),
    default_region: z
      .string()
      .length(2)
      .toUpperCase()
      .optional()
      .describe(
        'ISO 3166 country (e.g. `GB`) whose national numbers the CRM may write without `+`. Unset: a digits-only recipient is read after `+` (the CRM writes international numbers so) and one starting with `0` is refused. Set: one that is valid only as this country\'s national number is read so, and one valid both ways (two different numbers) is refused with `recipient_ambiguous`, unless the player\'s record decides (docs/operator-api.md, "Requests as the CRM sends them").',
      ),
    default_provider: z.string().min(1).optional().describe('The provider of a message that names no `provider_name`.'),
    max_segments: z.number().int().positive().default(10).describe('Longer messages are refused (400) before sending.'),
    smart_encoding: z.boolean().default(false).describe('Replace look-alike characters (curly quotes, dashes, odd spaces) so the text fits GSM-7.'),
    batch_concurrency: z.number().int().positive().default(64).describe('Messages of one batch request in flight to providers at once.'),
    batch_deadline: duration('20s').describe('After this, batch entries not yet sent are answered `fatal`, so the CRM retries them instead of timing out.'),
    single_wait: duration('2s').describe('Longest a single request waits for provider capacity before answering 503.'),
    send_timeout: duration('10s').describe('Provider call timeout; a timed-out send is transient (the CRM retries).'),
    dispatch_lease: duration('5m').describe(
      'A send still in progress after this lost its process: the sweep, or a retry of the same id, makes it `uncertain` (a receipt still confirms it) and asks its provider whether it has it before anything sends it again (docs/crash-windows.md).',
    ),
    ambiguous_retry_after: duration('60s').describe(
      'After a send that may have reached the provider anyway (a 5xx, or no answer after the request went out), a retry of the same activity.id waits this long for a receipt before sending again.',
    ),
    sender_name_wins: z
      .boolean()
      .default(false)
      .describe(
        "Whether the CRM's `sender_name` beats a provider's `senders.by_country` rule for the recipient's country. Off: the country rule wins (\"Senders per country\" below).",
      ),
    refuse_unusable_sender: z
      .boolean()
      .default(false)
      .describe(
        "Off: a `sender_name` no SMS can carry (more than 11 characters, characters outside letters, digits, spaces and . & _ -) goes out under the next sender of the chain (`senders.default`, then the provider's own `from`), counted, noted on the message's timeline and logged once per name. On: such a message is refused with 400, which the CRM reads as final (docs/operator-api.md, requests as the CRM sends them).",
      ),
    refuse_unknown_encoding: z
      .boolean()
      .default(false)
      .describe(
        'Off: an `encoding` (`enconding`) outside auto, gsm7, usc2, ucs2 is read as auto, counted, noted on the timeline and logged once per value. On: such a message is refused with 400.',
      ),
    suppression: z
      .union([z.enum(['on', 'off']), z.boolean()])
      .default('on')
      // After the default, so that the reference (scripts/config-reference.ts) sees it: zod leaves a default out of
      // the JSON Schema of a union holding a transform.
      .transform((v) => (v === true ? 'on' : v === false ? 'off' : v))
      .describe(
        '`on`: before a message is claimed, refuse it to a blocked, excluded or sms-opted-out player, and to a known player without sms consent (docs/consents.md); `off`: send what the CRM asks. `true` / `false` mean the same.',
      ),
    suppression_cache_ttl: duration('60s').describe("`operator.backend: http`: how long a player's `/userconsents` and `/userblocks` answers are reused."),
    opt_out_keywords: keywordLists(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT']).describe(
      'Inbound texts (trimmed, any case) that opt the sender out of sms: one list, or lists per language (`{en: [STOP], es: [BAJA]}`).',
    ),
    opt_in_keywords: keywordLists(['START', 'UNSTOP', 'YES']).describe('Inbound texts that opt the sender back in; none may also be an opt-out keyword.'),
  })
  .describe("The CRM's custom SMS channel (`/channels/sms/*`), and STOP/START by SMS.");

const ledger = z
  .strictObject({
    store_content: z.boolean().default(false).describe('Keep the text of SMS (sent and inbound) after the send; personal data, so off by default.'),
  })
  .describe('What the ledger keeps.');

/** One event kind's destination, overriding the catalogue's default (docs/events.md, "Catalogue"). */
const eventOverride = z.strictObject({
  method: z.enum(['POST', 'PUT']).optional().describe('The HTTP method of this kind.'),
  path: z
    .string()
    .regex(/^\/[^\s?#]*$/, 'must be a path starting with / (no query)')
    .optional()
    .describe('The path of this kind, appended to `crm.integration.url`.'),
  type: z.string().min(1).max(255).optional().describe('The type name of this kind on a queue transport.'),
  topic: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a Kafka topic name')
    .optional()
    .describe('The Kafka topic of this kind; unset: `crm.integration.kafka.topic`.'),
});

const integration = z
  .strictObject({
    transport: z
      .enum(['http', 'rabbitmq', 'kafka'])
      .default('http')
      .describe('How real-time events reach the CRM: its Integration API, a RabbitMQ or a Kafka connector (docs/events.md).'),
    url: z.url().optional().describe("Base of the CRM's Integration API (`{base_url}`); each event's path (`/v1/integration/bonus`, …) is appended."),
    headers: z.record(z.string(), z.string()).default({}).describe("Headers sent with every event: the CRM's credential (the spec leaves its scheme open)."),
    timeout: duration('10s').describe('Timeout of one event request.'),
    max_connections: z.number().int().positive().default(64).describe('Events in flight at once over HTTP (each user has at most one).'),
    rabbitmq: z
      .strictObject({
        url: z
          .string()
          .regex(/^amqps?:\/\//, 'must start with amqp:// or amqps://')
          .describe('The broker.'),
        exchange: z.string().default('').describe('The exchange to publish to.'),
        routing_key: z.string().default('').describe('The routing key of every event.'),
      })
      .optional()
      .describe('Required when `crm.integration.transport` is `rabbitmq`.'),
    kafka: z
      .strictObject({
        brokers: z
          .array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port'))
          .min(1)
          .describe('The brokers, as host:port.'),
        client_id: z.string().min(1).default('crm-sms-gateway').describe('The client id the gateway connects with.'),
        topic: z
          .string()
          .regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a Kafka topic name')
          .describe('The topic of every event whose kind names no other (`crm.integration.events.<kind>.topic`).'),
        ssl: z.boolean().default(false).describe('Connect over TLS.'),
        sasl: z
          .strictObject({
            mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).describe('The SASL mechanism.'),
            username: z.string().describe('The SASL user.'),
            password: z.string().describe('The SASL password.'),
          })
          .optional()
          .describe('SASL credentials, when the brokers want them.'),
      })
      .optional()
      .describe('Required when `crm.integration.transport` is `kafka`.'),
    events: z
      .strictObject(Object.fromEntries(EVENT_KINDS.map((k) => [k, eventOverride.optional()])) as Record<EventKind, z.ZodOptional<typeof eventOverride>>)
      .prefault({})
      .describe("Per event kind: method, path, queue type name and Kafka topic, where the operator's Swagger differs from the catalogue's defaults."),
    push: z
      .strictObject({
        username: z.string().default('').describe('Basic user name.'),
        password: z.string().default('').describe('Basic password.'),
      })
      .prefault({})
      .describe('Basic credentials of the push conversion webhook (`{url}/webhook/callback/push/`).'),
  })
  .superRefine((i, ctx) => {
    if (i.transport === 'rabbitmq' && !i.rabbitmq) ctx.addIssue({ code: 'custom', path: ['rabbitmq'], message: 'required when transport is rabbitmq' });
    if (i.transport === 'kafka' && !i.kafka) ctx.addIssue({ code: 'custom', path: ['kafka'], message: 'required when transport is kafka' });
    for (const clash of routeClashes(resolveCatalogue(i.events))) ctx.addIssue({ code: 'custom', path: ['events'], message: clash });
  })
  .describe('Where the real-time events of the relay outbox go (docs/events.md).');

const crm = z
  .strictObject({
    webhook_url: z.url().optional().describe('Conversions (delivery statuses) are posted to `{webhook_url}/sms/conversion`.'),
    webhook_api_key: z.string().default('').describe('Sent as X-API-KEY with every conversion.'),
    timeout: duration('10s').describe('Timeout of one conversion request.'),
    integration: integration.prefault({}),
  })
  .describe('Where the gateway calls the CRM: the conversion webhook and the real-time events.');

const relay = z
  .strictObject({
    api_keys: z
      .array(z.string().min(1))
      .default([])
      .describe("X-Api-Key values the operator's platform sends on `/relay/…`: its own keys, not the CRM's. Empty: the relay answers 403."),
    reference_window: duration('30d').describe(
      'How far back a bonus event without `credit_id` looks for a credit of the same user and bonus code, whose references it takes.',
    ),
    worker: z.boolean().default(true).describe('Deliver the outbox from `serve`; false: only the cron `flush` does.'),
    batch_size: z.number().int().min(1).max(10_000).default(1_000).describe('Users whose next event is claimed per round.'),
    poll_interval: duration('100ms').describe('How often the event outbox, when idle, looks for due events.'),
    retry_initial_ms: z.number().int().positive().default(1_000).describe('First back-off after a failed delivery.'),
    retry_max_ms: z.number().int().positive().default(300_000).describe('Longest back-off.'),
    max_attempts: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Attempts before an event is dead-lettered; unset: retry while the CRM answers a retryable status (docs/events.md).'),
    retry_client_errors: z
      .boolean()
      .default(false)
      .describe('Retry a 4xx answer (other than 408, 425, 429) instead of dead-lettering it at once: the CRM docs\' "retry until 200".'),
    lease: duration('60s').describe(
      'How long a claimed event stays reserved for the `serve` process (or flush) that claimed it; longer than `crm.integration.timeout` (with Kafka, than 3 × it + 1 s).',
    ),
    max_event_bytes: z
      .number()
      .int()
      .positive()
      .default(64 * 1024)
      .describe('Largest event body accepted on `/relay`; larger ones answer 400.'),
    max_depth: z.number().int().min(2).max(100).default(16).describe('Deepest nesting of objects and arrays accepted in an event.'),
  })
  .describe("The relay of real-time events from the operator's platform to the CRM (docs/relay.md).");

const delivery = z
  .strictObject({
    worker: z.boolean().default(true).describe('Run the conversion outbox inside `serve`; false: only the cron `flush` posts conversions.'),
    batch_size: z.number().int().min(1).max(10_000).default(500).describe('Conversions per webhook request.'),
    unknown_after: duration('72h').describe(
      'A message with no final receipt by then becomes `delivery_unknown`; so does a send left `uncertain` or `dispatching` (no answer, no receipt, no retry) this long after its last attempt.',
    ),
    status_query_after: duration('1h').describe(
      'A submitted message with no final receipt this long after its send: its provider is asked for its status once, where its API can tell (docs/crash-windows.md). ' +
        "Also how long a lost send's provider keeps being asked whether it has it before the send is left `uncertain`.",
    ),
    parked_receipt_ttl: duration('72h').describe(
      'A receipt that matches no message is matched again (on sends and every sweep) this long, then set aside: kept, counted in sms_gateway_receipts_expired_total, no longer searched.',
    ),
    parked_receipt_retention: duration('30d').describe(
      'Receipts set aside after `delivery.parked_receipt_ttl` are deleted by the sweep this long after they arrived.',
    ),
    max_receipts_per_message: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(20)
      .describe(
        'Receipts stored per message and per part; later ones are counted (sms_gateway_receipts_capped_total) and dropped, so a leaked receipt URL cannot add rows without end (docs/retention.md).',
      ),
    max_receipt_events: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1_000)
      .describe(
        'Events one receipt request may carry; more answers 413 and stores nothing. (Receipt ids longer than 128 characters answer 400; status and error texts are stored cut to 64 characters.)',
      ),
    sweep_interval: duration('1m').describe('How often `serve` runs the sweep that ends silent messages and re-matches parked receipts.'),
    poll_interval: duration('200ms').describe('How often the conversion outbox, when idle, looks for due conversions.'),
    retry_initial_ms: z.number().int().positive().default(1_000).describe('First back-off after a failed webhook request.'),
    retry_max_ms: z.number().int().positive().default(300_000).describe('Longest back-off.'),
    max_attempts: z.number().int().positive().default(25).describe('Attempts before a conversion is dead-lettered.'),
    lease: duration('60s').describe('How long a claimed conversion stays reserved for the `serve` process (or flush) that claimed it.'),
  })
  .describe('Receipts, the timeout sweep, and the conversions posted to the CRM webhook.');

const retention = z
  .strictObject({
    messages: duration('90d').describe('Messages, with their receipts, parts and conversions, this long after they were created.'),
    receipts: duration('90d').describe("Receipts this long after they arrived (a message's own go with it sooner when `retention.messages` is shorter)."),
    events: duration('90d').describe('CRM events (relay outbox) this long after they were accepted, once sent or dead-lettered.'),
    inbound: duration('90d').describe('Inbound SMS (STOP, START and any other text) this long after they arrived.'),
    costs: duration('400d').describe(
      'Spend per day (the rows behind /admin/costs) this long after the day, and the spend of budget periods that ended this long ago; kept beyond the messages, for invoices and year-on-year comparison, and holding no personal data.',
    ),
    blank_personal_data_after: duration('30d').describe(
      'Text and phone numbers of final messages and inbound SMS are overwritten with a marker this long after they were created; the row stays, for counts and the console.',
    ),
    interval: durationSchema('10m', { positive: true }).describe('How often the retention pass runs in `serve` (leader only).'),
  })
  .describe(
    'How long rows are kept (docs/retention.md); 0 keeps them forever. Only final rows go: a message neither waiting for its send, its receipt nor an unposted conversion; ' +
      'an event sent or dead-lettered; a receipt applied or set aside; every inbound SMS.',
  );

const operator = z
  .strictObject({
    backend: z
      .enum(['sql', 'http'])
      .default('sql')
      .describe("sql: users, consents, bonuses and credits in this gateway's database; http: the operator's platform (docs/connecting-the-crm.md)."),
    base_url: z.url().optional().describe("Base of the operator platform's API (may carry a path); the CRM's paths are appended. Required for `http`."),
    headers: z.record(z.string(), z.string()).default({}).describe('Headers sent with every call to the platform (its credentials, typically).'),
    timeout: duration('10s').describe('How long a platform call may take (a reconciliation: the wait for the headers and between chunks).'),
    max_connections: z.number().int().positive().default(32).describe('Pooled connections to the platform.'),
    reconciliation_page_size: z
      .number()
      .int()
      .min(100)
      .max(100_000)
      .default(5_000)
      .describe('Rows per keyset page when a reconciliation answer is streamed from the database.'),
    send_deleted_at: z
      .boolean()
      .default(false)
      .describe(
        "Whether GET /userdetails of a deleted player carries `deleted_at`. The interface lists the key, but the CRM maker's published schema allows no key outside its list, so a record carrying it fails the CRM's check; off unless the operator's CRM is known to take it (docs/operator-api.md).",
      ),
    authenticate_url: z
      .url()
      .optional()
      .describe(
        'POST /authenticate asks the operator\'s platform here (`{"sid"}` in, 200 `{"user_id"}` for a valid session), with `operator.headers` and `operator.timeout` (docs/operator-api.md).',
      ),
    credits: z
      .strictObject({
        url: z
          .url()
          .optional()
          .describe("Where each committed credit is pushed (POST, JSON, Idempotency-Key = credit_id): the operator's bonus engine or wallet."),
        headers: z.record(z.string(), z.string()).default({}).describe('Headers sent with every push.'),
        timeout: duration('10s').describe('Timeout of one push.'),
        batch_size: z.number().int().min(1).max(1_000).default(50).describe('Credits claimed per round.'),
        concurrency: z
          .number()
          .int()
          .min(1)
          .max(64)
          .default(1)
          .describe(
            'Pushes in flight at once. Each taken push is committed before the next goes, so a process killed while pushing pushes again at most this many credits (docs/crash-windows.md); more goes faster with a slow receiver.',
          ),
        poll_interval: duration('1s').describe('How often the credit outbox, when idle, looks for due credits.'),
        retry_initial_ms: z.number().int().positive().default(1_000).describe('First back-off after a failed push.'),
        retry_max_ms: z.number().int().positive().default(300_000).describe('Longest back-off.'),
        max_attempts: z
          .number()
          .int()
          .positive()
          .default(25)
          .describe('Attempts before a credit is dead-lettered (replay it with POST /admin/credits/replay).'),
        lease: duration('60s').describe('How long a claimed credit stays reserved for its claimer.'),
      })
      .prefault({})
      .describe('With the sql backend: credits pushed to the operator, retried with back-off, dead-lettered after max_attempts (docs/operator-api.md).'),
    session_tokens: z
      .strictObject({
        secret: z.string().min(32, 'must be at least 32 characters').optional().describe('HS256 shared secret; set this or `jwks_url`.'),
        jwks_url: z.url().optional().describe('Where the operator publishes its public keys (RS256, ES256, PS256, EdDSA); set this or `secret`.'),
        issuer: z.string().min(1).optional().describe('The `iss` a token must carry.'),
        audience: z.string().min(1).optional().describe('The `aud` a token must carry.'),
        clock_skew: duration('30s').describe("Leeway for exp, nbf and iat against this machine's clock."),
        user_claim: z.string().min(1).default('sub').describe("The claim that holds the player's user id."),
      })
      .superRefine((t, ctx) => {
        if ((t.secret === undefined) === (t.jwks_url === undefined))
          ctx.addIssue({ code: 'custom', path: [], message: 'set exactly one of secret and jwks_url' });
      })
      .optional()
      .describe('POST /authenticate checks the sid locally as a signed session token (JWT) instead; not together with `operator.authenticate_url`.'),
    session_failure_budget: z
      .number()
      .int()
      .min(0)
      .default(1_000)
      .describe(
        "Sessions POST /authenticate may refuse for one client address per `operator.session_failure_window`; past it, that address gets 429 with Retry-After on /authenticate alone (its sessions are not checked) until the window ends. A refused session never counts against the CRM's credentials (`auth.failure_budget`). 0: no limit (docs/security.md).",
      ),
    session_failure_window: duration('1m').describe('The window of `operator.session_failure_budget`.'),
  })
  .superRefine((o, ctx) => {
    if (o.backend === 'http' && !o.base_url) ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'required when operator.backend is http' });
    if (o.authenticate_url && o.session_tokens)
      ctx.addIssue({ code: 'custom', path: ['session_tokens'], message: 'set either operator.authenticate_url or operator.session_tokens, not both' });
  })
  .describe('Where the player data of the operator endpoints lives (docs/design.md §1 "operator").');

const admin = z
  .strictObject({
    api_key: z
      .string()
      .min(16, 'must be at least 16 characters')
      .optional()
      .describe(
        "Bearer key of `/admin/*` and `/metrics`, and the console's sign-in. Unset: the admin API and the console are closed, and `/metrics` too unless `metrics.public`.",
      ),
  })
  .describe('The admin API and the console.');

const metrics = z
  .strictObject({
    public: z.boolean().default(false).describe('Serve `/metrics` without the admin key (for a scraper on a private network).'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe(
        'Serve `/metrics` on a listener of its own (0: any free port), so the scrape port can stay inside the cluster; the API port then has no `/metrics`.',
      ),
    host: z.string().min(1).optional().describe('The address of that listener; unset: `server.host`.'),
  })
  .describe('The Prometheus endpoint (docs/operations.md).');

const tracing = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Export traces; off, no OpenTelemetry module is loaded.'),
    endpoint: z
      .url()
      .optional()
      .describe(
        "The collector's OTLP/HTTP base URL (`/v1/traces` is appended), e.g. http://otel-collector:4318. " +
          'Absent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318.',
      ),
    sampling_ratio: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(
        'Share of new traces kept; a CRM request whose traceparent says "sampled" (or not) decides for its own. ' +
          'Absent: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, else every trace.',
      ),
    service_name: z.string().min(1).optional().describe('The service name of the spans. Absent: OTEL_SERVICE_NAME, else crm-sms-gateway.'),
    export_interval: duration('5s').describe('How often buffered spans are exported.'),
    export_timeout: duration('10s').describe('Timeout of one export.'),
  })
  .describe('Traces over OTLP/HTTP (docs/tracing.md).');

const observability = z
  .strictObject({
    tracing: tracing.prefault({}),
  })
  .describe('Traces (metrics and logs have sections of their own).');

const log = z
  .strictObject({
    level: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('The pino level; phone numbers are masked and SMS text is never logged.'),
    access: z
      .strictObject({
        enabled: z
          .boolean()
          .default(false)
          .describe(
            'One `request` line per answer (at level info): method, route pattern, status, duration_ms, request_id, and trace_id when tracing is on. Never a body, a header, a query string, a client address or a path (so no id or phone number).',
          ),
        sample_rate: z
          .number()
          .min(0)
          .max(1)
          .default(1)
          .describe('Share of the answers below 500 that are written (0.01: one in a hundred); answers of 500 and above are always written.'),
      })
      .prefault({})
      .describe('The access log, off by default: at thousands of requests a second, a line each costs CPU and log storage.'),
  })
  .describe('The process log (JSON lines on stdout).');

export const configSchema = z
  .strictObject({
    server: server.prefault({}),
    database: database.prefault({}),
    auth: auth.prefault({}),
    sms: sms.prefault({}),
    quiet_hours: quietHoursConfigSchema.prefault({}),
    ledger: ledger.prefault({}),
    crm: crm.prefault({}),
    delivery: delivery.prefault({}),
    retention: retention.prefault({}),
    relay: relay.prefault({}),
    providers: z
      .record(z.string().regex(/^[a-z0-9_-]+$/i, 'provider names are letters, digits, - and _'), providerConfig)
      .describe(
        "A block per provider account: its name is what the CRM's provider_name picks (or an alias) and the path of its receipts, `/dlr/<name>`. At least one.",
      ),
    costs: costsConfigSchema.prefault({}),
    routing: routingSchema.prefault({}),
    admin: admin.prefault({}),
    operator: operator.prefault({}),
    metrics: metrics.prefault({}),
    observability: observability.prefault({}),
    log: log.prefault({}),
  })
  .superRefine((c, ctx) => {
    if (Object.keys(c.providers).length === 0) ctx.addIssue({ code: 'custom', path: ['providers'], message: 'configure at least one provider' });
    if ((c.sms.api_keys ?? c.auth.api_keys).length === 0) {
      ctx.addIssue({ code: 'custom', path: ['sms', 'api_keys'], message: 'no key for /channels/sms/* (set sms.api_keys or auth.api_keys)' });
    }
    if (c.auth.mode === 'api_key' && c.auth.api_keys.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['auth', 'api_keys'], message: 'required when auth.mode is api_key' });
    }
    // A send's lease must outlive its provider call, which ends by sms.send_timeout (single) or sms.batch_deadline
    // (batch) after its claim: a shorter lease lets a retry take a live send for a lost one, find nothing at its
    // provider yet, and send it a second time (docs/crash-windows.md).
    if (c.sms.dispatch_lease <= Math.max(c.sms.send_timeout, c.sms.batch_deadline)) {
      ctx.addIssue({ code: 'custom', path: ['sms', 'dispatch_lease'], message: 'must be longer than sms.send_timeout and sms.batch_deadline' });
    }
    // A credit's push starts by half its claim's lease at the latest (src/outbox/outbox.ts, sendEachCommitted) and must
    // end before the claim does, or a second claimer could push it while the first still waits for its answer.
    if (c.operator.credits.lease <= 2 * c.operator.credits.timeout) {
      ctx.addIssue({ code: 'custom', path: ['operator', 'credits', 'lease'], message: 'must be longer than twice operator.credits.timeout' });
    }
    // A claim must outlive the send it covers, or a second claimer could send the same event while the first waits.
    if (c.relay.lease <= c.crm.integration.timeout) {
      ctx.addIssue({ code: 'custom', path: ['relay', 'lease'], message: 'must be longer than crm.integration.timeout' });
    } else if (c.crm.integration.transport === 'kafka' && c.relay.lease <= 3 * c.crm.integration.timeout + 1_000) {
      // A Kafka send is awaited until the client gives up (src/events/kafka-transport.ts, kafkaSendGuardMs).
      ctx.addIssue({ code: 'custom', path: ['relay', 'lease'], message: 'must be longer than 3 × crm.integration.timeout + 1s with transport kafka' });
    }
    // Two names for one provider would make routing ambiguous.
    const seen = new Map<string, string>();
    for (const [name, p] of Object.entries(c.providers)) {
      for (const alias of [name, ...p.aliases]) {
        const key = alias.toLowerCase();
        const owner = seen.get(key);
        if (owner && owner !== name)
          ctx.addIssue({ code: 'custom', path: ['providers', name, 'aliases'], message: `"${alias}" already names provider ${owner}` });
        seen.set(key, name);
      }
    }
    checkFailoverRouteMembers(c.providers, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    checkCheapestDelivering(c.providers, c.costs.rates, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    for (const name of Object.keys(c.costs.rates)) {
      if (!Object.hasOwn(c.providers, name))
        ctx.addIssue({ code: 'custom', path: ['costs', 'rates', name], message: `"${name}" is not a configured provider` });
    }
    checkRouteRules(c.providers, (path, message) => ctx.addIssue({ code: 'custom', path, message }), countriesOfCallingCode, c.routing);
    const both = c.sms.opt_in_keywords.filter((w) => c.sms.opt_out_keywords.includes(w));
    if (both.length > 0) ctx.addIssue({ code: 'custom', path: ['sms', 'opt_in_keywords'], message: `${both.join(', ')} also listed in sms.opt_out_keywords` });
    if (c.sms.default_provider && !seen.has(c.sms.default_provider.toLowerCase())) {
      ctx.addIssue({ code: 'custom', path: ['sms', 'default_provider'], message: `"${c.sms.default_provider}" is not a configured provider` });
    }
  });

export type Config = z.output<typeof configSchema>;
