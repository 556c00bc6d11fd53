/** The .ts files under a folder of the repository, as repository-relative paths (for checks that read the source). */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export const repoRoot = join(import.meta.dirname, '..', '..');

/** Every .ts file below `dir`, skipping the folders (repository-relative paths) in `skip` and any node_modules. */
export function sourceFiles(dir: string, skip: readonly string[] = []): string[] {
  return readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || skip.includes(path) ? [] : sourceFiles(path, skip);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}
