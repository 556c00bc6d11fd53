/**
 * The gateway's HTTP listeners: the API port (server.*), with its deadlines against slow clients, and /metrics on
 * a port of its own when metrics.port is set. They listen before the parts that hand out their address are built
 * (the providers' receipt URLs, the callbacks' signature checks read the public URL), and serve once the apps are
 * built (`serve`): a request that arrives in between waits for them. Each registers its stop step: at shutdown the
 * API listener finishes its open requests (idle keep-alive connections closed at once, busy ones as soon as their
 * answer is out), then the metrics listener stops, before the ledger a scrape reads is closed.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Config } from '../config/schema.js';
import { listenFailure, type ListenerKeys } from '../kit/command-error.js';
import type { Shutdown } from '../kit/shutdown.js';

/** A listener's handler: the request, and the node:http objects it came on (`env`, where the client's address is read). */
type Fetch = (request: Request, env?: unknown) => Response | Promise<Response>;

export interface Listeners {
  /** Where the API answers, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Base of the URLs handed to providers: server.public_url, or `url`. */
  publicUrl: string;
  /** Where /metrics is served when metrics.port is set. */
  metricsUrl?: string;
  /** The same, as the 'gateway listening' log line names them. */
  logFields: { url: string; metrics_url?: string; public_url: string };
  /** Starts answering with the apps (`metrics`: the /metrics app, on metrics.port when it is set). */
  serve(apps: { api: Fetch; metrics: Fetch }): void;
}

/** What a request held for an app that never came (the start-up failed) is answered. */
const notStarted: Fetch = () =>
  new Response(JSON.stringify({ error: 'the gateway did not start; try again later', code: 503 }), {
    status: 503,
    headers: { 'content-type': 'application/json' },
  });

/** A listener's handler: waits for the app until `serve` hands it over, then is the app's. */
function handOver(): { fetch: Fetch; serve(app: Fetch): void; served: boolean } {
  let handOverApp: (app: Fetch) => void = () => {};
  const handed = new Promise<Fetch>((resolve) => {
    handOverApp = resolve;
  });
  let fetch: Fetch = (request, env) => handed.then((app) => app(request, env));
  const handler = {
    fetch: (request: Request, env?: unknown) => fetch(request, env),
    served: false,
    serve(app: Fetch) {
      fetch = app;
      handler.served = true;
      handOverApp(app);
    },
  };
  return handler;
}

/** The URL a listener answers on; a wildcard address is reached through loopback. */
function listenerUrl(server: ServerType, configuredHost: string): string {
  const { port } = server.address() as AddressInfo;
  const host = configuredHost === '0.0.0.0' || configuredHost === '::' ? '127.0.0.1' : configuredHost;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

const closeAll = (server: ServerType) => (server as { closeAllConnections?: () => void }).closeAllConnections?.();

/** A port in use or not allowed is one line naming the key (src/kit/command-error.ts), not an unhandled 'error'. */
function listen(options: Parameters<typeof serve>[0] & { port: number; hostname: string }, keys: ListenerKeys): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const s = serve(options, () => resolve(s));
    s.once('error', (error) => reject(listenFailure(keys, options.hostname, options.port, error)));
  });
}

/** The /metrics app is served on metrics.port when it is set (else the API app serves /metrics itself). */
export async function openListeners(config: Pick<Readonly<Config>, 'server' | 'metrics'>, shutdown: Shutdown): Promise<Listeners> {
  const api = handOver();
  const metrics = handOver();
  const { server: settings } = config;
  const metricsPort = config.metrics.port;
  const metricsHost = config.metrics.host ?? settings.host;
  const metricsServer =
    metricsPort === undefined
      ? undefined
      : await listen(
          { fetch: metrics.fetch, port: metricsPort, hostname: metricsHost },
          { port: 'metrics.port', host: config.metrics.host === undefined ? 'server.host' : 'metrics.host' },
        );
  const { request_timeout: requestTimeout, headers_timeout: headersTimeout, keep_alive_timeout: keepAliveTimeout } = settings;
  const server = await listen(
    {
      fetch: api.fetch,
      port: settings.port,
      hostname: settings.host,
      // A client that sends slower than this is cut off (408), so a trickle cannot hold a connection for minutes.
      // node:http checks the deadlines every connectionsCheckingInterval (its default 30 s): half the shorter one.
      serverOptions: {
        requestTimeout,
        headersTimeout,
        keepAliveTimeout,
        connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(Math.min(requestTimeout, headersTimeout) / 2))),
      },
    },
    { port: 'server.port', host: 'server.host' },
  ).catch((error: unknown) => {
    // The metrics listener already up is closed, so the process can exit with the one line.
    metricsServer?.close();
    throw error;
  });
  (server as { maxConnections?: number }).maxConnections = settings.max_connections;

  shutdown.add('listeners', 'finishing open requests', async () => {
    // A start-up that failed before the apps were built: requests held for them are answered now.
    for (const h of [api, metrics]) if (!h.served) h.serve(notStarted);
    await new Promise<void>((resolve) => {
      // Keep-alive connections would hold close() open for their idle timeout (server.keep_alive_timeout): close
      // the idle ones now, and each busy one as soon as its answer is out.
      const closeIdle = () => (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      const sweep = setInterval(closeIdle, 50);
      server.close(() => {
        clearInterval(sweep);
        resolve();
      });
      closeIdle();
    });
    // A scrape reads the ledger: the metrics listener stops before the ledger closes.
    if (metricsServer) {
      closeAll(metricsServer);
      await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    }
  });
  // Whatever hangs (a client that never finishes), the process must still stop.
  shutdown.atDeadline(() => closeAll(server));

  const url = listenerUrl(server, settings.host);
  const publicUrl = settings.public_url?.replace(/\/$/, '') || url;
  const metricsUrl = metricsServer && listenerUrl(metricsServer, metricsHost);
  return {
    url,
    publicUrl,
    ...(metricsUrl ? { metricsUrl } : {}),
    logFields: { url, ...(metricsUrl ? { metrics_url: metricsUrl } : {}), public_url: publicUrl },
    serve(apps) {
      api.serve(apps.api);
      metrics.serve(apps.metrics);
    },
  };
}
