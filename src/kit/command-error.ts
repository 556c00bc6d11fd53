/**
 * A failure an operator fixes (a port in use, a database out of reach, a schema to migrate first): the CLI prints its
 * message as it is, one line naming the key, and exits with its code; no stack trace, which is for bugs.
 */
export class CommandError extends Error {
  override name = 'CommandError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** The keys of one listener: `server.port` and `server.host`, or `metrics.port` and the host it listens on. */
export interface ListenerKeys {
  port: string;
  host: string;
}

/** One line for a listener that could not start, naming the key to change and the address it tried. */
export function listenFailure(keys: ListenerKeys, host: string, port: number, error: unknown): CommandError {
  const code = (error as { code?: unknown })?.code;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return new CommandError(`${keys.port}: ${address} is already in use (EADDRINUSE): stop what listens there or choose another port`);
    case 'EACCES':
      return new CommandError(`${keys.port}: not allowed to listen on ${address} (EACCES): ports below 1024 need privileges; use 1024 or above`);
    case 'EADDRNOTAVAIL':
      return new CommandError(`${keys.host}: ${host} is not an address of this machine (EADDRNOTAVAIL), so ${address} cannot be listened on`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new CommandError(`${keys.host}: ${host} does not resolve (${code}), so ${address} cannot be listened on`);
    default:
      return new CommandError(`${keys.port}: cannot listen on ${address}: ${(error as Error)?.message ?? String(error)}`);
  }
}
