/**
 * The gateway's shutdown as named steps under one deadline. Each builder registers its own stop step beside its
 * start, in one of a few stages that run in a fixed order; the steps of a stage run one after another in the order
 * they were added. Whatever hangs, the shutdown ends at the deadline, naming the step it was still on: every
 * accepted message is already committed, so giving up loses nothing the ledger holds.
 */

/**
 * The stages, in the order they run: sends stop being taken; providers close while the listener still answers (the
 * sandbox posts its pending receipts on close); the listeners finish open requests; the outboxes stop; the services
 * that outlive them (spans, the instance count) end; the ledger closes last.
 */
export const STOP_STAGES = ['sends', 'providers', 'listeners', 'outboxes', 'services', 'ledger'] as const;
export type StopStage = (typeof STOP_STAGES)[number];

export interface Shutdown {
  /** The one deadline of the whole shutdown (server.shutdown_timeout). */
  readonly budgetMs: number;
  /** Adds a named stop step to a stage; `step` is what the deadline's error names ("closing the ledger"). */
  add(stage: StopStage, step: string, stop: () => unknown): void;
  /** Runs `action` `ms` after the shutdown began, unless it ended first (a cut-off at a share of the budget). */
  after(ms: number, action: () => void): void;
  /** Runs when the deadline passes, before the shutdown gives up (cut what still hangs). */
  atDeadline(action: () => void): void;
  /** Runs every step; rejects with the step still running when the deadline passed, or with a step's own error. */
  run(): Promise<void>;
}

/** `budgetName`: the configuration key of the budget, as the deadline's error names it. */
export function createShutdown(budgetMs: number, budgetName: string): Shutdown {
  const steps = new Map<StopStage, Array<{ step: string; stop: () => unknown }>>(STOP_STAGES.map((stage) => [stage, []]));
  const timers: Array<{ ms: number; action: () => void }> = [];
  const cuts: Array<() => void> = [];
  return {
    budgetMs,
    add: (stage, step, stop) => void steps.get(stage)!.push({ step, stop }),
    after: (ms, action) => void timers.push({ ms, action }),
    atDeadline: (action) => void cuts.push(action),
    async run() {
      const running = timers.map(({ ms, action }) => setTimeout(action, ms));
      let current = 'starting';
      const sequence = (async () => {
        for (const stage of STOP_STAGES) {
          for (const { step, stop } of steps.get(stage)!) {
            current = step;
            await stop();
          }
        }
      })();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          for (const cut of cuts) cut();
          reject(new Error(`shutdown still ${current} after ${budgetName} (${budgetMs} ms)`));
        }, budgetMs);
      });
      try {
        await Promise.race([sequence, deadline]);
      } finally {
        clearTimeout(timer);
        for (const t of running) clearTimeout(t);
      }
    },
  };
}
