/**
 * `crm-sms-gateway import users FILE`: loads NDJSON user records (one PUT /admin/users body per line, user_id
 * included) into the sql backend. The file is streamed line by line and written in batches, one transaction each,
 * so memory stays flat for any file size. A bad line is reported with its number and skipped; good lines are kept.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import type { Config } from '../config/schema.js';
import type { Database } from '../ledger/schema.js';
import { createProgressLine } from '../observability/progress.js';
import { saveLoadedUsers, toLoadedUser, type LoadedUser } from '../operator/players/load-players.js';
import { adminUserSchema, parseBody } from '../operator/requests.js';
import { openCheckedLedger } from '../ledger/engine/schema-check.js';

export interface ImportProgress {
  lines: number;
  loaded: number;
  bad: number;
}

export interface ImportOptions {
  now: () => number;
  batchSize?: number;
  onBadLine: (line: number, error: string) => void;
  /** Called after each batch is written. */
  onProgress?: (progress: ImportProgress) => void;
}

/** Parses one line; answers the user to load or why the line is refused. */
export function parseUserLine(text: string, at: number): { ok: true; user: LoadedUser } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `not valid JSON: ${(error as Error).message}` };
  }
  const parsed = parseBody(adminUserSchema, value);
  if (!parsed.ok) return parsed;
  const { user_id } = parsed.value;
  if (user_id === undefined) return { ok: false, error: 'user_id: is required' };
  return { ok: true, user: toLoadedUser({ ...parsed.value, user_id }, at) };
}

export async function importUsers(db: Kysely<Database>, input: Readable, options: ImportOptions): Promise<ImportProgress> {
  const batchSize = options.batchSize ?? 2_000;
  const progress: ImportProgress = { lines: 0, loaded: 0, bad: 0 };
  let batch: LoadedUser[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const at = options.now();
    await saveLoadedUsers(db, batch, at);
    progress.loaded += batch.length;
    batch = [];
    options.onProgress?.({ ...progress });
  };

  for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    progress.lines++;
    if (text.trim() === '') continue;
    const line = parseUserLine(text, options.now());
    if (!line.ok) {
      progress.bad++;
      options.onBadLine(progress.lines, line.error);
      continue;
    }
    batch.push(line.user);
    if (batch.length >= batchSize) await flush();
  }
  await flush();
  return progress;
}

export interface CliStreams {
  out: NodeJS.WritableStream & { isTTY?: boolean };
  err: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Bad lines beyond this are counted, not printed, so a wrong file cannot flood the terminal. */
const MAX_REPORTED = 1_000;

/** The CLI command: answers the exit code (0 all loaded, 1 some lines refused or the file unreadable, 2 misuse). */
export async function runImportUsers(config: Readonly<Config>, file: string, io: CliStreams, now: () => number = Date.now): Promise<number> {
  if (config.operator.backend !== 'sql') {
    io.err.write('import users: operator.backend is http, so the CRM reads players from the operator platform; nothing to import\n');
    return 2;
  }
  // Never migrates: a schema that is not this version's is refused, naming `migrate` (src/ledger/engine/schema-check.ts).
  const { ledger } = await openCheckedLedger(config.database, 'job', 'import users');
  try {
    const input = createReadStream(file);
    const opened = await new Promise<Error | null>((resolve) => input.once('open', () => resolve(null)).once('error', resolve));
    if (opened) {
      io.err.write(`import users: cannot read ${file}: ${opened.message}\n`);
      return 1;
    }
    let reported = 0;
    // The share of the file read gives the ETA: lines vary in length, bytes do not lie about what is left.
    const size = (await stat(file)).size;
    const fraction = () => (size > 0 ? Math.min(1, input.bytesRead / size) : undefined);
    const progress = createProgressLine(io.err, 'import users', now, 'lines');
    const counts = (p: ImportProgress) => `${p.lines} lines read, ${p.loaded} users loaded, ${p.bad} bad`;
    const result = await importUsers(ledger.db, input, {
      now,
      onBadLine: (line, error) => {
        if (++reported > MAX_REPORTED) return;
        progress.breakLine();
        io.err.write(`${file}:${line}: ${error}${reported === MAX_REPORTED ? ' (further bad lines are counted, not shown)' : ''}\n`);
      },
      onProgress: (p) => progress.update(p.lines, fraction()),
    });
    progress.finish(result.lines, fraction());
    io.err.write(`import users: ${counts(result)}\n`);
    io.out.write(`loaded ${result.loaded} users from ${file} (${result.lines} lines, ${result.bad} bad)\n`);
    return result.bad > 0 ? 1 : 0;
  } finally {
    await ledger.close();
  }
}
