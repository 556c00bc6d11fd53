/**
 * The doors anyone may knock on before any credential is checked (docs/public-doors.md): one list, read by the body
 * limit (src/app.ts), the provider callbacks' door and the tracing middleware (src/observability/otel.ts).
 */

/** The provider callbacks: `/dlr/{provider}` (receipts) and `/mo/{provider}` (players' messages). */
const isProviderCallback = (path: string): boolean => path.startsWith('/dlr/') || path.startsWith('/mo/');

/**
 * The open doors whose honest bodies are small: the provider callbacks and the two sign-ins (the console's form, the
 * OAuth token request). Their body limit is server.callback_body_limit.
 */
export const isOpenDoor = (path: string): boolean => isProviderCallback(path) || path === '/console/login' || path === '/oauth/token';

/** Paths served without a credential besides the open doors: probes, the API's documents, /metrics (metrics.public). */
const UNGUARDED = new Set(['/healthz', '/readyz', '/openapi.json', '/docs', '/metrics']);

/** Every door a stranger reaches without a credential: the open doors and the unguarded paths. */
export const isPublicDoor = (path: string): boolean => isOpenDoor(path) || UNGUARDED.has(path);
