/**
 * The config.yaml schema (docs/design.md §3). Every object is strict, so an unknown or misspelt key stops the start
 * with its path; defaults make the shipped config.yaml runnable with no account anywhere.
 */
import { z } from 'zod';
import { providerPlugins } from '../../providers/index.js';
import { checkRouteMembers, routeConfigSchema } from './route-config.js';
import { durationSchema } from '../kit/duration.js';
import { addressOrBlock } from '../kit/address-blocks.js';
import { EVENT_KINDS, resolveCatalogue, routeClashes, type EventKind } from '../crm/event-catalogue.js';

const duration = (fallback: string) => durationSchema(fallback);

const [firstPlugin, ...otherPlugins] = Object.values(providerPlugins).map((p) => p.configSchema);
// `route` is not a plugin but a provider_name over several of them (src/provider-wrappers/failover-route.ts).
const providerConfig = z.discriminatedUnion('type', [firstPlugin!, ...otherPlugins, routeConfigSchema]);

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
    /**
     * `production` refuses to start on unsafe settings (src/config/production-checks.ts), `development` warns about
     * them. When the key is absent: the GATEWAY_ENV variable, else production (filled in by loadConfig).
     */
    environment: z.enum(['production', 'development']).default('production'),
    host: z.string().default('0.0.0.0'),
    port: z.number().int().min(0).max(65_535).default(8080),
    /** Base of the receipt URLs handed to providers; defaults to http://127.0.0.1:{port}. */
    public_url: z.url().optional(),
    body_limit_bytes: z
      .number()
      .int()
      .positive()
      .default(5 * 1024 * 1024),
    /**
     * Largest body of a provider callback (`/dlr/*`, `/mo/*`) and of the two sign-ins (`/console/login`,
     * `/oauth/token`), which anyone can reach: a receipt or an inbound SMS is well under 10 KB and a sign-in under
     * 1 KB, so bodies beyond this are answered 413 as they arrive, before any is read in full.
     */
    callback_body_limit: z
      .number()
      .int()
      .positive()
      .default(64 * 1024),
    /**
     * JSON bodies nesting deeper are refused when read (src/http/json-depth.ts); at most 1,000, well below where
     * JSON.stringify of a stored activity would overflow the stack.
     */
    max_json_depth: z.number().int().min(2).max(1_000).default(64),
    /** Gateway processes sharing the port (node:cluster); `auto` is one per CPU core. */
    workers: z.union([z.literal('auto'), z.number().int().min(1).max(64)]).default(1),
    /** How long SIGTERM/SIGINT waits for open requests and pending work before the process gives up and exits 1. */
    shutdown_timeout: duration('8s'),
    /** Longest time a client may take to send a whole request (headers and body); slower ones get 408 and are cut off. */
    request_timeout: duration('30s'),
    /** Longest time a client may take to send the request headers. */
    headers_timeout: duration('20s'),
    /**
     * How long an idle keep-alive connection is kept open for the client's next request. Longer than the 60 s idle
     * timeout of common HTTP clients and load balancers, so that they close an idle connection first: when the server
     * closes it first, a request the client writes at that moment is reset (ECONNRESET) and a POST is not retried.
     */
    keep_alive_timeout: duration('65s'),
    /** Open connections per gateway process; connections beyond it are closed at once. */
    max_connections: z.number().int().positive().default(10_000),
    /**
     * Load balancers and proxies (addresses or CIDR blocks) whose X-Forwarded-For is believed: a request from one of
     * them counts as coming from the rightmost forwarded address that is not itself listed (docs/trust.md). Empty: the
     * TCP peer is the client, and the header is ignored.
     */
    trusted_proxies: z.array(addressOrBlock).default([]),
    /**
     * How often each process records that it is alive in the ledger, and re-counts the live ones, so that providers'
     * rate_per_second and max_concurrency are split among all instances on one database (docs/shared-limits.md).
     */
    instance_heartbeat: durationSchema('1s', { positive: true }),
    /** A process whose last heartbeat is older than this no longer counts as live (its share goes to the others). */
    instance_expiry: durationSchema('5s', { positive: true }),
  })
  .superRefine((s, ctx) => {
    if (s.instance_expiry <= s.instance_heartbeat) {
      ctx.addIssue({ code: 'custom', path: ['instance_expiry'], message: 'must be longer than server.instance_heartbeat' });
    }
    // Node refuses a headers timeout longer than the request timeout it is part of.
    if (s.request_timeout > 0 && s.headers_timeout > s.request_timeout) {
      ctx.addIssue({ code: 'custom', path: ['headers_timeout'], message: 'must not be longer than server.request_timeout' });
    }
  });

const database = z.strictObject({
  url: z
    .string()
    .default('sqlite:./data/gateway.db')
    .refine((u) => /^(sqlite:|postgres(ql)?:\/\/)/.test(u), 'must start with sqlite: or postgres://'),
  /** SQLite `synchronous` pragma: `normal` survives a process crash, `full` also a power loss (slower). */
  sqlite_synchronous: z.enum(['normal', 'full']).default('normal'),
  pool_size: z.number().int().positive().default(10),
});

const auth = z
  .strictObject({
    mode: z.enum(['api_key', 'basic', 'oauth']).default('api_key'),
    api_keys: z.array(z.string().min(1)).default([]),
    basic: z.strictObject({ username: z.string().min(1), password: z.string().min(1) }).optional(),
    oauth: z
      .strictObject({
        client_id: z.string().min(1),
        client_secret: z.string().min(1),
        token_ttl_seconds: z.number().int().positive().default(3600),
        /**
         * HMAC key for access tokens, independent of client_secret. Unset: random per process (or cluster), so
         * tokens end with a restart; instances sharing a PostgreSQL database need the same one (production requires it).
         */
        signing_secret: z.string().min(16, 'must be at least 16 characters').optional(),
      })
      .optional(),
    /** Failed authentications one client address may make per `failure_window` before it gets 429 (0: no limit). */
    failure_budget: z.number().int().min(0).default(20),
    failure_window: duration('1m'),
    /** The CRM's egress addresses or CIDR blocks: never counted nor refused by the failure limit (docs/trust.md). */
    trusted_addresses: z.array(addressOrBlock).default([]),
  })
  .superRefine((a, ctx) => {
    if (a.mode === 'basic' && !a.basic) ctx.addIssue({ code: 'custom', path: ['basic'], message: 'required when auth.mode is basic' });
    if (a.mode === 'oauth' && !a.oauth) ctx.addIssue({ code: 'custom', path: ['oauth'], message: 'required when auth.mode is oauth' });
  });

const sms = z.strictObject({
  /** Keys the CRM sends as X-Api-Key on /channels/sms/*; falls back to auth.api_keys. Several allow rotation. */
  api_keys: z.array(z.string().min(1)).optional(),
  /** ISO 3166 region for recipients written without `+` (e.g. GB); without it such numbers are refused. */
  default_region: z.string().length(2).toUpperCase().optional(),
  /** provider_name used when a message has none. */
  default_provider: z.string().min(1).optional(),
  max_segments: z.number().int().positive().default(10),
  smart_encoding: z.boolean().default(false),
  /** Messages of one batch request in flight to providers at once. */
  batch_concurrency: z.number().int().positive().default(64),
  /** After this, batch entries not yet sent are answered `fatal` so the CRM retries them instead of timing out. */
  batch_deadline: duration('20s'),
  /** Longest a single request waits for provider capacity before answering 503. */
  single_wait: duration('2s'),
  /** Provider call timeout; a timed-out send is transient (the CRM retries). */
  send_timeout: duration('10s'),
  /** A send still `dispatching` after this (its process died) may be claimed by a retry of the same id. */
  dispatch_lease: duration('5m'),
  /**
   * After a send that may have reached the provider anyway (a 5xx, or no answer after the request went out), a
   * retry of the same activity.id waits this long for a receipt proving it was accepted before sending it again.
   */
  ambiguous_retry_after: duration('60s'),
  /**
   * Whether the CRM's sender_name beats a provider's `senders.by_country` rule for the recipient's country
   * (src/provider-wrappers/sender-rules.ts). Off: the country rule wins, so a US recipient gets the configured number.
   */
  sender_name_wins: z.boolean().default(false),
  /**
   * `on`: before a message is claimed, its activity.user_id is looked up in the operator data; a blocked, excluded
   * or opted-out player (or a known one without sms consent) is refused (src/consents/suppression.ts).
   */
  suppression: z.union([z.enum(['on', 'off']), z.boolean().transform((b) => (b ? 'on' : 'off'))]).default('on'),
  /** operator.backend http: how long a player's /userconsents and /userblocks answers are reused. */
  suppression_cache_ttl: duration('60s'),
  /** Inbound texts (trimmed, any case) that opt the sender out of sms: one list, or lists per language. */
  opt_out_keywords: keywordLists(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT']),
  /** Inbound texts that opt the sender back in. */
  opt_in_keywords: keywordLists(['START', 'UNSTOP', 'YES']),
});

const ledger = z.strictObject({
  /** Keep SMS text after the send (personal data: off by default). */
  store_content: z.boolean().default(false),
});

/** One event kind's destination, overriding the catalogue's default (docs/events.md, "Catalogue"). */
const eventOverride = z.strictObject({
  method: z.enum(['POST', 'PUT']).optional(),
  path: z
    .string()
    .regex(/^\/[^\s?#]*$/, 'must be a path starting with / (no query)')
    .optional(),
  type: z.string().min(1).max(255).optional(),
  /** Kafka topic of this kind; crm.integration.kafka.topic when unset. */
  topic: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a Kafka topic name')
    .optional(),
});

/** Where the real-time events of the relay outbox go (docs/events.md): the Integration API, a RabbitMQ or a Kafka connector. */
const integration = z
  .strictObject({
    transport: z.enum(['http', 'rabbitmq', 'kafka']).default('http'),
    /** Base of the CRM's Integration API ({base_url}); the event's path (/v1/integration/bonus, …) is appended. */
    url: z.url().optional(),
    /** Sent with every event: the CRM's credential (the spec leaves its scheme open). */
    headers: z.record(z.string(), z.string()).default({}),
    timeout: duration('10s'),
    /** Events in flight at once over HTTP (each user has at most one). */
    max_connections: z.number().int().positive().default(64),
    rabbitmq: z
      .strictObject({
        url: z.string().regex(/^amqps?:\/\//, 'must start with amqp:// or amqps://'),
        exchange: z.string().default(''),
        routing_key: z.string().default(''),
      })
      .optional(),
    kafka: z
      .strictObject({
        brokers: z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')).min(1),
        client_id: z.string().min(1).default('crm-sms-gateway'),
        /** The topic of every event unless crm.integration.events.<kind>.topic names another. */
        topic: z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'must be a Kafka topic name'),
        ssl: z.boolean().default(false),
        sasl: z.strictObject({ mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']), username: z.string(), password: z.string() }).optional(),
      })
      .optional(),
    /** Per event kind: method, path, queue type name and Kafka topic, when the operator's Swagger differs from the defaults. */
    events: z
      .strictObject(Object.fromEntries(EVENT_KINDS.map((k) => [k, eventOverride.optional()])) as Record<EventKind, z.ZodOptional<typeof eventOverride>>)
      .prefault({}),
    /** Basic credentials of the push conversion webhook ({url}/webhook/callback/push/). */
    push: z.strictObject({ username: z.string().default(''), password: z.string().default('') }).prefault({}),
  })
  .superRefine((i, ctx) => {
    if (i.transport === 'rabbitmq' && !i.rabbitmq) ctx.addIssue({ code: 'custom', path: ['rabbitmq'], message: 'required when transport is rabbitmq' });
    if (i.transport === 'kafka' && !i.kafka) ctx.addIssue({ code: 'custom', path: ['kafka'], message: 'required when transport is kafka' });
    for (const clash of routeClashes(resolveCatalogue(i.events))) ctx.addIssue({ code: 'custom', path: ['events'], message: clash });
  });

const crm = z.strictObject({
  webhook_url: z.url().optional(),
  webhook_api_key: z.string().default(''),
  timeout: duration('10s'),
  integration: integration.prefault({}),
});

/** The relay of real-time events from the operator's platform to the CRM (docs/relay.md). */
const relay = z.strictObject({
  /** X-Api-Key values the operator's platform sends on /relay/…: keys of their own, not the CRM's. Empty: relay off. */
  api_keys: z.array(z.string().min(1)).default([]),
  /** A bonus event without credit_id takes the references of the newest credit of its user and bonus_code this recent. */
  reference_window: duration('30d'),
  /** Deliver the outbox from `serve` (the cron `flush` delivers it too). */
  worker: z.boolean().default(true),
  /** Users whose next event is claimed per round. */
  batch_size: z.number().int().min(1).max(10_000).default(1_000),
  poll_interval: duration('100ms'),
  retry_initial_ms: z.number().int().positive().default(1_000),
  retry_max_ms: z.number().int().positive().default(300_000),
  /** Attempts before an event is dead-lettered; unset = retry while the CRM answers a retryable status (docs/events.md). */
  max_attempts: z.number().int().positive().optional(),
  /** Retry a 4xx answer (other than 408, 425, 429) instead of dead-lettering it at once: the docs' "retry until 200". */
  retry_client_errors: z.boolean().default(false),
  /** How long a claimed event stays reserved for the worker (or flush) that claimed it. */
  lease: duration('60s'),
  /** Largest event body accepted on /relay (bytes). */
  max_event_bytes: z
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  /** Deepest nesting of objects and arrays accepted in an event. */
  max_depth: z.number().int().min(2).max(100).default(16),
});

const delivery = z.strictObject({
  worker: z.boolean().default(true),
  batch_size: z.number().int().min(1).max(10_000).default(500),
  unknown_after: duration('72h'),
  /**
   * A submitted message with no final receipt this long after its send: its provider is asked for its status once
   * (where its API can tell, src/delivery/lookups.ts) before unknown_after reports it delivery_unknown. Also how long
   * a lost send's provider keeps being asked whether it has it before the send is left `uncertain`.
   */
  status_query_after: duration('1h'),
  /** How long a receipt that matches no message keeps being matched again before it is set aside (kept, not searched). */
  parked_receipt_ttl: duration('72h'),
  /** Receipts set aside after parked_receipt_ttl are deleted this long after they arrived (the sweep). */
  parked_receipt_retention: duration('30d'),
  /**
   * Receipts stored per message and per segment (a split message may have a receipt or more per part); later ones
   * are counted (sms_gateway_receipts_capped_total) and dropped, so a leaked receipt URL cannot add rows without end.
   */
  max_receipts_per_message: z.number().int().min(1).max(10_000).default(20),
  /** Events one receipt request may carry; more answers 413 and stores nothing. */
  max_receipt_events: z.number().int().min(1).max(100_000).default(1_000),
  sweep_interval: duration('1m'),
  poll_interval: duration('200ms'),
  retry_initial_ms: z.number().int().positive().default(1_000),
  retry_max_ms: z.number().int().positive().default(300_000),
  max_attempts: z.number().int().positive().default(25),
  /** How long a claimed conversion stays reserved for the worker (or flush) that claimed it. */
  lease: duration('60s'),
});

/**
 * How long rows are kept (docs/retention.md). `0` keeps them forever. Only rows that are final go: a message neither
 * waiting for its send nor its receipt nor an unposted conversion, an event sent or dead-lettered, a receipt applied
 * or set aside; every inbound SMS (handled when it arrived).
 */
const retention = z.strictObject({
  /** Messages, with their receipts, parts and conversions, this long after they were created. */
  messages: duration('90d'),
  /** Receipts this long after they arrived (a message's own go with it sooner when `messages` is shorter). */
  receipts: duration('90d'),
  /** CRM events (relay outbox) this long after they were accepted, once sent or dead-lettered. */
  events: duration('90d'),
  /** Inbound SMS (STOP, START and any other text) this long after they arrived. */
  inbound: duration('90d'),
  /**
   * Text and phone numbers of final messages (content, recipient) and inbound SMS (content, sender) are overwritten
   * with a marker this long after they were created; the row stays, for counts and the console.
   */
  blank_personal_data_after: duration('30d'),
  /** How often the retention pass runs in `serve` (leader only). */
  interval: durationSchema('10m', { positive: true }),
});

/** Where the player data of the operator endpoints lives (docs/design.md §1 "operator"). */
const operator = z
  .strictObject({
    /** `sql`: users, consents, bonuses and credits in this gateway's database; `http`: the operator's platform. */
    backend: z.enum(['sql', 'http']).default('sql'),
    /** Base of the operator platform's API (may carry a path); the CRM's paths are appended to it. */
    base_url: z.url().optional(),
    /** Sent with every call to the operator platform (its credentials, typically). */
    headers: z.record(z.string(), z.string()).default({}),
    timeout: duration('10s'),
    max_connections: z.number().int().positive().default(32),
    /** Rows per keyset page when streaming a reconciliation answer from the database. */
    reconciliation_page_size: z.number().int().min(100).max(100_000).default(5_000),
    /**
     * POST /authenticate asks the operator's platform here (`{"sid"}` in, 200 `{"user_id"}` for a valid session),
     * with operator.headers and operator.timeout (docs/operator-api.md "POST /authenticate").
     */
    authenticate_url: z.url().optional(),
    /**
     * sql backend: each committed credit is pushed to the operator's bonus engine or wallet at `url` (POST, JSON,
     * Idempotency-Key = credit_id), retried with back-off, dead-lettered after max_attempts (docs/operator-api.md).
     */
    credits: z
      .strictObject({
        url: z.url().optional(),
        headers: z.record(z.string(), z.string()).default({}),
        timeout: duration('10s'),
        batch_size: z.number().int().min(1).max(1_000).default(50),
        poll_interval: duration('1s'),
        retry_initial_ms: z.number().int().positive().default(1_000),
        retry_max_ms: z.number().int().positive().default(300_000),
        /** Attempts before a credit is dead-lettered (replay it from POST /admin/credits/replay). */
        max_attempts: z.number().int().positive().default(25),
        lease: duration('60s'),
      })
      .prefault({}),
    /** POST /authenticate checks the sid locally as a signed session token (JWT) instead. */
    session_tokens: z
      .strictObject({
        /** HS256 shared secret. */
        secret: z.string().min(32, 'must be at least 32 characters').optional(),
        /** Where the operator publishes its public keys (RS256, ES256, PS256, EdDSA). */
        jwks_url: z.url().optional(),
        issuer: z.string().min(1).optional(),
        audience: z.string().min(1).optional(),
        /** Leeway for exp, nbf and iat against this machine's clock. */
        clock_skew: duration('30s'),
        /** The claim that holds the player's user id. */
        user_claim: z.string().min(1).default('sub'),
      })
      .superRefine((t, ctx) => {
        if ((t.secret === undefined) === (t.jwks_url === undefined))
          ctx.addIssue({ code: 'custom', path: [], message: 'set exactly one of secret and jwks_url' });
      })
      .optional(),
  })
  .superRefine((o, ctx) => {
    if (o.backend === 'http' && !o.base_url) ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'required when operator.backend is http' });
    if (o.authenticate_url && o.session_tokens)
      ctx.addIssue({ code: 'custom', path: ['session_tokens'], message: 'set either operator.authenticate_url or operator.session_tokens, not both' });
  });

const admin = z.strictObject({
  api_key: z.string().min(16, 'must be at least 16 characters').optional(),
});

const metrics = z.strictObject({
  /** Serve /metrics without the admin Bearer key (for scrapers on a private network). */
  public: z.boolean().default(false),
  /**
   * Serve /metrics on a listener of its own (0: any free port) instead of the API's, so the scrape port can stay
   * inside the cluster while the API port is exposed; the API port then has no /metrics.
   */
  port: z.number().int().min(0).max(65_535).optional(),
  /** The address of that listener; server.host when unset. */
  host: z.string().min(1).optional(),
});

/** Traces over OTLP/HTTP (docs/tracing.md); off by default, and then no OpenTelemetry module is loaded. */
const tracing = z.strictObject({
  enabled: z.boolean().default(false),
  /** The collector's OTLP/HTTP base URL (/v1/traces is appended), e.g. http://otel-collector:4318. */
  endpoint: z.url().default('http://127.0.0.1:4318'),
  /** Share of new traces kept; a CRM request's traceparent that says "sampled" (or not) decides for its own. */
  sampling_ratio: z.number().min(0).max(1).default(1),
  service_name: z.string().min(1).default('crm-sms-gateway'),
  /** How often buffered spans are exported. */
  export_interval: duration('5s'),
  export_timeout: duration('10s'),
});

const observability = z.strictObject({
  tracing: tracing.prefault({}),
});

const log = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export const configSchema = z
  .strictObject({
    server: server.prefault({}),
    database: database.prefault({}),
    auth: auth.prefault({}),
    sms: sms.prefault({}),
    ledger: ledger.prefault({}),
    crm: crm.prefault({}),
    delivery: delivery.prefault({}),
    retention: retention.prefault({}),
    relay: relay.prefault({}),
    providers: z.record(z.string().regex(/^[a-z0-9_-]+$/i, 'provider names are letters, digits, - and _'), providerConfig),
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
    checkRouteMembers(c.providers, (path, message) => ctx.addIssue({ code: 'custom', path, message }));
    const both = c.sms.opt_in_keywords.filter((w) => c.sms.opt_out_keywords.includes(w));
    if (both.length > 0) ctx.addIssue({ code: 'custom', path: ['sms', 'opt_in_keywords'], message: `${both.join(', ')} also listed in sms.opt_out_keywords` });
    if (c.sms.default_provider && !seen.has(c.sms.default_provider.toLowerCase())) {
      ctx.addIssue({ code: 'custom', path: ['sms', 'default_provider'], message: `"${c.sms.default_provider}" is not a configured provider` });
    }
  });

export type Config = z.output<typeof configSchema>;
export type ProviderConfig = Config['providers'][string];
