/**
 * The loop every outbox kind runs in `serve` (src/outbox/outbox.ts startOutbox): rounds back to back while there is
 * work, else one round every `idleMs`, sooner on `wake()`. A wake that arrives while a round runs is kept, so work
 * queued during the round never waits for the next interval.
 */
import type { Logger } from 'pino';

export interface OutboxLoop {
  wake(): void;
  /** Ends the loop after the round in progress. */
  stop(): Promise<void>;
}

/** `round` resolves true when it found work and may find more at once; a round that throws is logged and waits. */
export function startOutboxLoop(round: () => Promise<boolean>, options: { idleMs: number; logger: Logger; name: string }): OutboxLoop {
  let stopped = false;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) {
        woken = false;
        return resolve();
      }
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const done = (async () => {
    while (!stopped) {
      try {
        if (!(await round())) await sleep(options.idleMs);
      } catch (error) {
        options.logger.error({ err: error }, `${options.name} round failed`);
        await sleep(options.idleMs);
      }
      wakeUp = undefined;
    }
  })();

  return {
    wake() {
      if (wakeUp) wakeUp();
      else woken = true;
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      await done;
    },
  };
}
