/**
 * loadConfig: read config.yaml, substitute `${VAR}` and `${VAR:-default}` from the environment and `${file:PATH}`
 * from files (mounted secrets), validate, freeze. Nothing else reads process.env after startup (docs/design.md §8:
 * one validated, frozen object).
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import YAML, { LineCounter } from 'yaml';
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

/** What one string's references came to: its new text, the variables missing, the defaults used. */
interface Substitution {
  value: string | undefined;
  missing: string[];
  /** `${VAR:-default}` references whose VAR was not set, so their default was used. */
  defaulted: string[];
}

/**
 * Replaces the references in one string. What comes out is text, never parsed as YAML: a secret starting with `#`, a
 * quoted or all-digit token and `+15005550006` stay exactly as set. A value that was one whole reference and came
 * out empty counts as not written (the key's default applies).
 */
function substitute(value: string, env: Env, path: string): Substitution {
  const missing: string[] = [];
  const defaulted: string[] = [];
  const replaced = value.replace(REFERENCE, (_, file: string | undefined, name: string, fallback: string | undefined) => {
    if (file !== undefined) return readSecretFile(file.trim(), path, 'the file');
    const found = lookUp(env, name, path);
    if (found !== undefined && found !== '') return found;
    if (fallback !== undefined) {
      defaulted.push(name);
      return fallback;
    }
    missing.push(name);
    return '';
  });
  const whole = value.match(REFERENCE);
  if (whole?.length === 1 && whole[0] === value.trim() && replaced.trim() === '') return { value: undefined, missing, defaulted };
  return { value: replaced, missing, defaulted };
}

type Path = Array<string | number>;

/**
 * Expands every string of the tree (no recursion: the YAML may nest deeply). Returns the new tree, the paths of the
 * values that came from a reference (the only ones the schema may turn into numbers or booleans), and the keys whose
 * value used a `${VAR:-default}` default. Every variable that is missing is named at once, in the file's order.
 */
function substituteTree(document: unknown, env: Env): { tree: unknown; substituted: Map<string, Path>; defaulted: Map<string, string[]> } {
  const substituted = new Map<string, Path>();
  const defaulted = new Map<string, string[]>();
  const missing: string[] = [];
  const expand = (node: unknown, path: Path): unknown => {
    if (typeof node !== 'string') return node;
    const key = path.map(String).join('.');
    const result = substitute(node, env, key);
    if (result.missing.length > 0) {
      const files = result.missing.map((m) => `${m}_FILE`).join(', ');
      missing.push(`${key}: environment variable ${result.missing.join(', ')} is not set (nor ${files}) and has no default`);
    }
    if (result.defaulted.length > 0) defaulted.set(key, result.defaulted);
    if (result.value !== node) substituted.set(JSON.stringify(path), path);
    return result.value;
  };
  const root = { value: document };
  const stack: Array<{ holder: Record<string | number, unknown>; key: string | number; path: Path }> = [{ holder: root, key: 'value', path: [] }];
  while (stack.length > 0) {
    const { holder, key, path } = stack.pop()!;
    const node = holder[key];
    // Children go on the stack last first, so they come off in the file's order (the order missing variables are named).
    if (Array.isArray(node)) {
      const copy = [...node];
      holder[key] = copy;
      for (let i = copy.length - 1; i >= 0; i--) stack.push({ holder: copy as unknown as Record<number, unknown>, key: i, path: [...path, i] });
    } else if (node && typeof node === 'object') {
      // Object.fromEntries keeps every key an own property, whatever its name.
      const copy = Object.fromEntries(Object.entries(node));
      holder[key] = copy;
      for (const child of Object.keys(copy).reverse()) stack.push({ holder: copy, key: child, path: [...path, child] });
    } else {
      holder[key] = expand(node, path);
    }
  }
  if (missing.length === 1) throw new ConfigError(missing[0]!);
  if (missing.length > 1) throw new ConfigError(`${missing.length} environment variables are missing:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
  return { tree: root.value, substituted, defaulted };
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
export const REMOVED_KEYS: Readonly<Record<string, string>> = {
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
  const { tree: expanded, substituted, defaulted } = substituteTree(document ?? {}, env);
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
  const config = deepFreeze(result.data);
  DEFAULTED.set(config, describeDefaults(expanded, defaulted));
  return config;
}

/** Per loaded config: the keys whose value is not what the operator wrote but a default (src/config/production-checks.ts). */
const DEFAULTED = new WeakMap<object, ReadonlyMap<string, string>>();

/**
 * Where each key's value came from when it was not written: `the default of ${DATABASE_URL:-…}` (the variable was not
 * set, or misspelt) or `the built-in default` (the key is absent). Only the keys production cares about are looked at.
 */
function describeDefaults(expanded: unknown, defaulted: Map<string, string[]>): ReadonlyMap<string, string> {
  const sources = new Map<string, string>();
  for (const [key, variables] of defaulted)
    sources.set(key, `the default of ${variables.map((v) => `\${${v}:-…}`).join(', ')} (${variables.join(', ')} not set)`);
  const database = (expanded as { database?: { url?: unknown } } | undefined)?.database;
  if (database?.url === undefined) sources.set('database.url', 'the built-in default (the key is not written)');
  return sources;
}

/** The keys of a config from parseConfig or loadConfig whose value is a default, not a setting (empty for any other object). */
export function defaultedKeys(config: object): ReadonlyMap<string, string> {
  return DEFAULTED.get(config) ?? new Map();
}

export async function loadConfig(file: string, env: Env = process.env): Promise<Readonly<Config>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read ${file}: ${(error as Error).message}`);
  }
  return parseConfig(readYaml(text, file), env, file);
}

/**
 * What each YAML problem is, in words that quote nothing of the file: the yaml library's own messages (and its pretty
 * errors, which print the offending line under the message) may carry the text of a value, and a value on that line
 * may be a secret (`api_key: "s3cr…` without its closing quote, an escape inside a key, a key starting with `*`).
 */
const YAML_PROBLEMS: ReadonlyMap<string, string> = new Map([
  ['ALIAS_PROPS', 'an alias cannot carry a tag or an anchor'],
  ['BAD_ALIAS', 'an alias (*name) names no anchor set before it'],
  ['BAD_DIRECTIVE', 'a % directive is not one YAML knows'],
  ['BAD_DQ_ESCAPE', 'a double-quoted value holds an unknown \\ escape (single quotes keep backslashes as written)'],
  ['BAD_INDENT', 'the indentation is wrong, or a [ or { is not closed'],
  ['BAD_PROP_ORDER', 'an anchor or a tag is in the wrong place'],
  ['BAD_SCALAR_START', 'a value starts with a character YAML reserves (@ or `): quote it'],
  ['BLOCK_AS_IMPLICIT_KEY', 'a value holds ": " or a list item is out of line: quote the value, or fix the indentation'],
  ['BLOCK_IN_FLOW', 'a block value is inside [ ] or { }'],
  ['DUPLICATE_KEY', 'a key is written twice in one mapping'],
  ['IMPOSSIBLE', 'the YAML cannot be read'],
  ['KEY_OVER_1024_CHARS', 'a key is longer than 1024 characters'],
  ['MISSING_CHAR', 'a closing quote, bracket, comma or colon is missing'],
  ['MULTILINE_IMPLICIT_KEY', 'a key runs over several lines (an unclosed quote or a wrong indentation above it?)'],
  ['MULTIPLE_ANCHORS', 'a node has two anchors'],
  ['MULTIPLE_DOCS', 'the file holds several YAML documents (---): write one'],
  ['MULTIPLE_TAGS', 'a node has two tags'],
  ['NON_STRING_KEY', 'a key is not text'],
  ['RESOURCE_EXHAUSTION', 'aliases expand too far'],
  ['TAB_AS_INDENT', 'a tab is used for indentation: use spaces'],
  ['TAG_RESOLVE_FAILED', 'a value starts with ! and is read as an unknown tag: quote it'],
  ['UNEXPECTED_TOKEN', 'something stands where YAML expects no more on the line, or a value that starts with a reserved character is unquoted'],
  ['BAD_COLLECTION_TYPE', 'a tag does not fit its value'],
  ['INTEGER_BEYOND_DOUBLE', 'an integer beyond 2^53 (a 64-bit id) would be read as a neighbouring number, another brand or id: write it in quotes'],
]);

/** The dotted key path of the mapping entries around `offset`, leaving out a key that does not end before it (it may be the value misread). */
function keyPathAt(document: YAML.Document, offset: number): string {
  const path: string[] = [];
  let node: unknown = document.contents;
  while (node) {
    let inner: unknown;
    if (YAML.isMap(node)) {
      for (const pair of node.items) {
        const key = pair.key;
        if (!YAML.isScalar(key) || !key.range || key.range[1] > offset) continue;
        const end = YAML.isNode(pair.value) && pair.value.range ? pair.value.range[2] : key.range[2];
        if (offset < key.range[0] || offset > end) continue;
        path.push(String(key.value).slice(0, 64));
        inner = pair.value;
        break;
      }
    } else if (YAML.isSeq(node)) {
      const index = node.items.findIndex((item) => YAML.isNode(item) && item.range && offset >= item.range[0] && offset <= item.range[2]);
      if (index >= 0) {
        path.push(String(index));
        inner = node.items[index];
      }
    }
    node = inner;
  }
  return path.join('.');
}

/**
 * The YAML document of the config file, or a ConfigError naming the line, the column and the key path of the first
 * problem and what kind of problem it is, never the text there (YAML_PROBLEMS). The library's warnings (a value read
 * as an unknown `!tag`, which then silently becomes empty) are refused too.
 */
function readYaml(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  // logLevel 'error': the library prints its warnings itself otherwise, with the text they are about.
  const document = YAML.parseDocument(text, { prettyErrors: false, lineCounter, logLevel: 'error' });
  const problem = (code: string, offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    const path = keyPathAt(document, offset);
    const where = `line ${line}, column ${col}${path ? ` (in ${path})` : ''}`;
    return new ConfigError(
      `${file} is not valid YAML at ${where}: ${YAML_PROBLEMS.get(code) ?? 'the YAML cannot be read'} [${code}]; the line is not shown, as it may hold a secret${unquotedFlowReference(text, line)}`,
    );
  };
  const first = document.errors[0] ?? document.warnings[0];
  if (first) throw problem(first.code, first.pos[0]);
  let unresolved: YAML.Alias | undefined;
  let rounded: YAML.Scalar | undefined;
  YAML.visit(document, {
    Alias(_, alias) {
      if (alias.resolve(document) !== undefined) return undefined;
      unresolved = alias;
      return YAML.visit.BREAK;
    },
    // A plain 9007199254740993 (a brand id as a key of routing.brands, or in a list) reads as the double
    // 9007199254740992 and would match another brand's messages; quoted, it is the text the CRM's ids are compared as.
    Scalar(_, scalar) {
      if (typeof scalar.value !== 'number' || !Number.isInteger(scalar.value) || Number.isSafeInteger(scalar.value)) return undefined;
      if (!/^[-+]?\d+$/.test(scalar.source ?? '')) return undefined;
      rounded = scalar;
      return YAML.visit.BREAK;
    },
  });
  if (unresolved) throw problem('BAD_ALIAS', unresolved.range?.[0] ?? 0);
  if (rounded) throw problem('INTEGER_BEYOND_DOUBLE', rounded.range?.[0] ?? 0);
  try {
    return document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Aliases expanding past maxAliasCount (an alias bomb) is what is left to fail here; no message of it is printed.
    const bomb = /^Excessive alias count/.test((error as Error).message);
    throw new ConfigError(`${file} is not valid YAML: ${bomb ? YAML_PROBLEMS.get('RESOURCE_EXHAUSTION') : YAML_PROBLEMS.get('IMPOSSIBLE')}`);
  }
}

/**
 * In a flow list or map (`[…]`, `{…}`) YAML reads a `{` as the start of a nested map, so `[${KEY}]` cannot parse
 * (a plain scalar there may not hold a flow indicator, YAML 1.2 §7.3.3). The reference itself is not read before
 * the YAML (what it expands to must never be parsed as YAML), so the error says how to write it instead. Only the
 * reference is shown (a variable's name or a file's path), never the rest of the line.
 */
function unquotedFlowReference(text: string, line: number): string {
  const source = text.split('\n')[line - 1];
  const reference = source && /[[{,][^"']*?(\$\{[^}]*\})/.exec(source);
  if (!reference) return '';
  return `\n(a \${…} reference inside [ ] or { } must be quoted there: "${reference[1]}")`;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
