/**
 * loadConfig: read config.yaml, substitute `${VAR}` and `${VAR:-default}` from the environment, validate, freeze.
 * Nothing else reads process.env after startup (STYLE: one validated, frozen object).
 */
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

type Env = Record<string, string | undefined>;

function substitute(value: string, env: Env, path: string): unknown {
  const missing: string[] = [];
  const replaced = value.replace(REFERENCE, (_, name: string, fallback: string | undefined) => {
    const found = env[name];
    if (found !== undefined && found !== '') return found;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return '';
  });
  if (missing.length > 0) {
    throw new ConfigError(`${path}: environment variable ${missing.join(', ')} is not set and has no default`);
  }
  // A value that is one whole reference takes the YAML type of what it expands to (`${PORT:-8080}` → 8080).
  const whole = value.match(REFERENCE);
  if (whole?.length === 1 && whole[0] === value.trim()) {
    const typed: unknown = YAML.parse(replaced);
    if (typed === null || typeof typed !== 'object') return typed ?? undefined;
  }
  return replaced;
}

function substituteTree(node: unknown, env: Env, path: string): unknown {
  if (typeof node === 'string') return substitute(node, env, path);
  if (Array.isArray(node)) return node.map((item, i) => substituteTree(item, env, `${path}[${i}]`));
  if (node && typeof node === 'object') {
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [key, substituteTree(value, env, path ? `${path}.${key}` : key)]),
    );
  }
  return node;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (path ? `${path}.${k}` : k));
    return `unknown key${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
  }
  if (issue.code === 'invalid_union' && issue.path.at(-2) === 'providers') {
    return `${path}.type: must be one of the provider types (${'see README: Providers'})`;
  }
  return `${path || '(top level)'}: ${issue.message}`;
}

/** Validates an already-parsed document (the YAML tree). */
export function parseConfig(document: unknown, env: Env = process.env, source = 'config'): Readonly<Config> {
  const expanded = substituteTree(document ?? {}, env, '');
  const result = configSchema.safeParse(expanded);
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
