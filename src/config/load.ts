/**
 * loadConfig: read config.yaml, substitute `${VAR}` and `${VAR:-default}` from the environment and `${file:PATH}`
 * from files (mounted secrets), validate, freeze. Nothing else reads process.env after startup (docs/design.md §8:
 * one validated, frozen object).
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const REFERENCE = /\$\{(?:file:([^}]+)|([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}/g;

type Env = Record<string, string | undefined>;

/** A secret file holds the value; the line break an editor or `echo` leaves at its end is not part of it. */
const MAX_SECRET_FILE_BYTES = 64 * 1024;

function readSecretFile(file: string, path: string, via: string): string {
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (error) {
    throw new ConfigError(`${path}: cannot read ${via} ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (text.length > MAX_SECRET_FILE_BYTES) throw new ConfigError(`${path}: ${via} ${file} is over ${MAX_SECRET_FILE_BYTES} bytes`);
  return text.toString('utf8').replace(/\r?\n$/, '');
}

/**
 * A variable's value: VAR itself, else the file VAR_FILE names (the convention of the official database images and
 * Docker/Kubernetes secrets mounted as files), else undefined.
 */
function lookUp(env: Env, name: string, path: string): string | undefined {
  const found = Object.hasOwn(env, name) ? env[name] : undefined;
  if (found !== undefined && found !== '') return found;
  const fileVar = `${name}_FILE`;
  const file = Object.hasOwn(env, fileVar) ? env[fileVar] : undefined;
  return file ? readSecretFile(file, path, `the ${fileVar} file`) : undefined;
}

/**
 * Replaces the references in one string. What comes out is text, never parsed as YAML: a secret starting with `#`, a
 * quoted or all-digit token and `+15005550006` stay exactly as set. A value that was one whole reference and came
 * out empty counts as not written (the key's default applies).
 */
function substitute(value: string, env: Env, path: string): string | undefined {
  const missing: string[] = [];
  const replaced = value.replace(REFERENCE, (_, file: string | undefined, name: string, fallback: string | undefined) => {
    if (file !== undefined) return readSecretFile(file.trim(), path, 'the file');
    const found = lookUp(env, name, path);
    if (found !== undefined && found !== '') return found;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  if (missing.length > 0) {
    throw new ConfigError(
      `${path}: environment variable ${missing.join(', ')} is not set (nor ${missing.map((m) => `${m}_FILE`).join(', ')}) and has no default`,
    );
  }
  const whole = value.match(REFERENCE);
  if (whole?.length === 1 && whole[0] === value.trim() && replaced.trim() === '') return undefined;
  return replaced;
}

type Path = Array<string | number>;

/**
 * Expands every string of the tree (no recursion: the YAML may nest deeply). Returns the new tree and the paths of
 * the values that came from a reference, the only ones the schema may turn into numbers or booleans.
 */
function substituteTree(document: unknown, env: Env): { tree: unknown; substituted: Map<string, Path> } {
  const substituted = new Map<string, Path>();
  const expand = (node: unknown, path: Path): unknown => {
    if (typeof node !== 'string') return node;
    const value = substitute(node, env, path.map(String).join('.'));
    if (value !== node) substituted.set(JSON.stringify(path), path);
    return value;
  };
  const root = { value: document };
  const stack: Array<{ holder: Record<string | number, unknown>; key: string | number; path: Path }> = [{ holder: root, key: 'value', path: [] }];
  while (stack.length > 0) {
    const { holder, key, path } = stack.pop()!;
    const node = holder[key];
    if (Array.isArray(node)) {
      const copy = [...node];
      holder[key] = copy;
      copy.forEach((_, i) => stack.push({ holder: copy as unknown as Record<number, unknown>, key: i, path: [...path, i] }));
    } else if (node && typeof node === 'object') {
      // Object.fromEntries keeps every key an own property, whatever its name.
      const copy = Object.fromEntries(Object.entries(node));
      holder[key] = copy;
      for (const child of Object.keys(copy)) stack.push({ holder: copy, key: child, path: [...path, child] });
    } else {
      holder[key] = expand(node, path);
    }
  }
  return { tree: root.value, substituted };
}

/**
 * Where the schema asks for a number or a boolean and the value came from a reference as text, the text is read as
 * one (`${PORT:-8080}` → 8080, `${SMART:-true}` → true); nowhere else.
 */
function coerceAt(tree: unknown, path: Path, issue: z.core.$ZodIssue): boolean {
  let holder = tree as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) {
    if (!holder || typeof holder !== 'object' || !Object.hasOwn(holder, key)) return false;
    holder = holder[key] as Record<string | number, unknown>;
  }
  const last = path.at(-1)!;
  if (!holder || typeof holder !== 'object' || !Object.hasOwn(holder, last)) return false;
  const text = holder[last];
  if (typeof text !== 'string') return false;
  const expected = issue.code === 'invalid_type' ? issue.expected : issue.code === 'invalid_union' ? 'number' : undefined;
  if (expected === 'number' && /^\s*-?\d+(\.\d+)?\s*$/.test(text)) holder[last] = Number(text);
  else if (expected === 'boolean' && /^\s*(true|false)\s*$/i.test(text)) holder[last] = text.trim().toLowerCase() === 'true';
  else return false;
  return true;
}

/**
 * Keys an earlier version took, with what to do instead: an old config naming one stops the start with this, not
 * with a bare "unknown key".
 */
const REMOVED_KEYS: Readonly<Record<string, string>> = {
  'server.workers':
    'server.workers: removed (two processes on one port were slower than one, docs/deployment.md "Scaling"): run one gateway process per instance and scale with replicas; delete the key',
};

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (path ? `${path}.${k}` : k));
    const unknown = keys.filter((k) => !Object.hasOwn(REMOVED_KEYS, k));
    const removed = keys.filter((k) => Object.hasOwn(REMOVED_KEYS, k)).map((k) => REMOVED_KEYS[k]!);
    if (unknown.length > 0) removed.push(`unknown key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
    return removed.join('\n  - ');
  }
  if (issue.code === 'invalid_union' && issue.path.at(-2) === 'providers') {
    return `${path}.type: must be one of the provider types (${'see docs/configuration.md "Providers"'})`;
  }
  return `${path || '(top level)'}: ${issue.message}`;
}

const ENVIRONMENTS = ['production', 'development'] as const;

/** server.environment when the file does not set it: GATEWAY_ENV, else production (the safe side). */
function environmentFromEnv(env: Env): (typeof ENVIRONMENTS)[number] {
  const value = Object.hasOwn(env, 'GATEWAY_ENV') ? env.GATEWAY_ENV : undefined;
  if (value === undefined || value === '') return 'production';
  const known = ENVIRONMENTS.find((e) => e === value.trim().toLowerCase());
  if (!known) throw new ConfigError(`environment variable GATEWAY_ENV: must be production or development (got ${JSON.stringify(value)})`);
  return known;
}

/** Puts server.environment into the expanded tree when the file leaves it out (or it expanded to nothing). */
function fillEnvironment(tree: unknown, env: Env): void {
  if (!tree || typeof tree !== 'object' || Array.isArray(tree)) return;
  const root = tree as Record<string, unknown>;
  const server = Object.hasOwn(root, 'server') ? root.server : undefined;
  if (server === undefined || server === null) root.server = { environment: environmentFromEnv(env) };
  else if (typeof server === 'object' && !Array.isArray(server) && (server as Record<string, unknown>).environment === undefined) {
    (server as Record<string, unknown>).environment = environmentFromEnv(env);
  }
}

/** Validates an already-parsed document (the YAML tree). */
export function parseConfig(document: unknown, env: Env = process.env, source = 'config'): Readonly<Config> {
  const { tree: expanded, substituted } = substituteTree(document ?? {}, env);
  fillEnvironment(expanded, env);
  let result = configSchema.safeParse(expanded);
  // Each pass turns the referenced values the schema wants as numbers or booleans into them, then checks again.
  for (let pass = 0; !result.success && pass < 3; pass++) {
    let changed = false;
    for (const issue of result.error.issues) {
      const path = substituted.get(JSON.stringify(issue.path));
      if (path && coerceAt(expanded, path, issue)) changed = true;
    }
    if (!changed) break;
    result = configSchema.safeParse(expanded);
  }
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  - ${describeIssue(issue)}`);
    throw new ConfigError(`${source} is not valid:\n${lines.join('\n')}`);
  }
  return deepFreeze(result.data);
}

export async function loadConfig(file: string, env: Env = process.env): Promise<Readonly<Config>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let document: unknown;
  try {
    document = YAML.parse(text, { prettyErrors: true });
  } catch (error) {
    throw new ConfigError(`${file} is not valid YAML: ${(error as Error).message}`);
  }
  return parseConfig(document, env, file);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
