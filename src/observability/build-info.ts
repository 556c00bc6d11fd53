/**
 * The facts behind `sms_gateway_build_info`. The version is read once at start from the package's own package.json,
 * found by walking up from this file (it sits two levels up in src/ and three in dist/src/).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildInfo } from './metrics.js';

const PACKAGE_NAME = 'crm-sms-gateway';

export function readBuildInfo(): BuildInfo {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === PACKAGE_NAME && typeof pkg.version === 'string') return { version: pkg.version, node: process.version };
    } catch {
      // no package.json here (or not ours): look one level up
    }
    dir = dirname(dir);
  }
  return { version: 'unknown', node: process.version };
}
