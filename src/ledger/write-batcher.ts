/**
 * Group commit: work items submitted while a write is running are written together by the next one, so concurrent
 * requests share transactions instead of paying one commit each (DESIGN §6). One flush runs at a time, which is
 * also what SQLite's single writer wants.
 */
export interface WriteBatcher<I, O> {
  run(items: readonly I[]): Promise<O[]>;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export function createWriteBatcher<I, O>(write: (items: I[]) => Promise<O[]>, maxItems = 1_000): WriteBatcher<I, O> {
  let queue: Pending<I, O>[] = [];
  let running = false;

  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxItems);
      queue = queue.slice(batch.length);
      try {
        const outputs = await write(batch.map((p) => p.item));
        batch.forEach((p, i) => p.resolve(outputs[i]!));
      } catch (error) {
        for (const p of batch) p.reject(error);
      }
    }
    running = false;
  }

  return {
    run(items) {
      const promises = items.map(
        (item) => new Promise<O>((resolve, reject) => queue.push({ item, resolve, reject })),
      );
      // Wait one turn of the event loop so requests arriving together are written together.
      if (!running) {
        running = true;
        setImmediate(() => void drain());
      }
      return Promise.all(promises);
    },
  };
}
