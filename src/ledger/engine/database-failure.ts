/**
 * One line for an operator when the ledger cannot be opened or reached: the key to check (`database.url`), where it
 * points (host:port/database, or the SQLite file; never the password) and what the driver said. Pure.
 */

/** The code a failure carries: Node's (ECONNREFUSED), PostgreSQL's SQLSTATE (28P01), SQLite's (SQLITE_CANTOPEN). */
function codeOf(error: unknown): string | undefined {
  const e = error as { code?: unknown; errors?: unknown[] } | undefined;
  if (typeof e?.code === 'string') return e.code;
  // Connecting to a name with several addresses (localhost: ::1 and 127.0.0.1) fails with an AggregateError.
  return e?.errors?.length ? codeOf(e.errors[0]) : undefined;
}

/** Where database.url points, without its credentials. */
export function databaseTarget(url: string): string {
  if (url.startsWith('sqlite:')) return `the SQLite file ${url.slice('sqlite:'.length)}`;
  try {
    const parsed = new URL(url);
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
    return `PostgreSQL at ${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${database ? `/${database}` : ''}`;
  } catch {
    return 'PostgreSQL (the URL does not parse)';
  }
}

/** What an operator does about the common codes; the driver's own message follows in every case. */
const HINTS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'nothing listens there',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve (DNS did not answer)',
  ETIMEDOUT: 'no answer (a firewall, or the wrong host)',
  EHOSTUNREACH: 'the host cannot be reached',
  ENETUNREACH: 'the network cannot be reached',
  '28P01': 'the password was refused',
  '28000': 'the login was refused',
  '3D000': 'the database does not exist (create it, then run migrate)',
  '57P03': 'PostgreSQL is starting up or shutting down',
  '53300': 'PostgreSQL has no connection slot left',
  SQLITE_CANTOPEN: 'the file cannot be opened (does its folder exist and may this user write it?)',
  SQLITE_NOTADB: 'the file is not a SQLite database',
  SQLITE_READONLY: 'the file is read-only for this user',
  EACCES: 'permission denied',
};

function messageOf(error: unknown): string {
  const e = error as { message?: unknown; errors?: unknown[] } | undefined;
  if (typeof e?.message === 'string' && e.message !== '') return e.message.split('\n')[0]!;
  return e?.errors?.length ? messageOf(e.errors[0]) : String(error);
}

export function describeDatabaseFailure(url: string, error: unknown): string {
  const code = codeOf(error);
  const message = messageOf(error);
  const hint = code && Object.hasOwn(HINTS, code) ? `${HINTS[code]}: ` : '';
  return `database.url: cannot use ${databaseTarget(url)}: ${hint}${message}${code && !message.includes(code) ? ` (${code})` : ''}`;
}
