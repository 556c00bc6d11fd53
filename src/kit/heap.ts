/**
 * One memory-reducing collection of V8's heap: full collections until one frees nothing more, the young generation
 * cut back to its smallest, free pages given back to the system. It is what V8 does when memory runs short, and it
 * pauses the event loop for the whole of it (80–95 ms after `serve`'s start-up on the 2-core machines here).
 *
 * `serve` runs it once, just after start-up: loading ~1,050 modules, checking the schema and building the routes
 * leave garbage behind, and the young generation grows to its cap while they run (2 × 8 MiB with the bin's flag).
 * Nothing collected it before the first burst: an idle gateway held 122–127 MiB, and 97–98 MiB after this
 * (bench/README.md "Memory, second round"). Under load V8's own collections take over.
 *
 * V8 offers the collection only through its `gc` extension; `--expose-gc` set now installs it in contexts made
 * from here on, so it is taken from a new context and the gateway's own global scope never holds a `gc`.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcExtension = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** Collects and compacts the heap now; answers how long the event loop stood still, in ms. */
export function compactHeap(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('typeof gc === "function" ? gc : undefined') as GcExtension | undefined;
  if (!gc) return 0;
  const started = performance.now();
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return performance.now() - started;
}
