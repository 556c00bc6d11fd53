/**
 * Bounds how many batch requests are worked on at once (sms.concurrent_batches). A batch keeps every one of its
 * messages in memory until its answer (the prepared messages, their claims, promises and answers: a few KB each),
 * so fifty connections sending batches of 500 at once keep 25,000 messages alive and the heap grows with them. The
 * CPU is the limit either way, so a batch over the bound waits with only its parsed body, and is admitted in
 * arrival order as earlier batches answer. Nothing is acknowledged before it is committed, so waiting changes no
 * promise made to the CRM. The slot is taken after the body is read (src/sms/routes.ts): a slow upload never holds
 * one. A batch never waits longer than `maxWaitMs`: after that it is worked on anyway, over the bound.
 */

export interface Admission {
  /** Resolves with a release function once a slot is free, or after `maxWaitMs` with one that releases nothing. */
  enter(): Promise<() => void>;
  /** Batches being worked on, and waiting. */
  readonly active: number;
  readonly waiting: number;
}

export function createAdmission(slots: number, maxWaitMs: number): Admission {
  let active = 0;
  const queue: Array<(admitted: boolean) => void> = [];

  function leave(): void {
    const next = queue.shift();
    if (next) next(true);
    else active--;
  }

  return {
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
    enter() {
      if (active < slots) {
        active++;
        return Promise.resolve(once(leave));
      }
      return new Promise((resolve) => {
        const admit = (admitted: boolean) => {
          clearTimeout(timer);
          resolve(admitted ? once(leave) : () => {});
        };
        const timer = setTimeout(() => {
          const at = queue.indexOf(admit);
          if (at >= 0) queue.splice(at, 1);
          admit(false);
        }, maxWaitMs);
        queue.push(admit);
      });
    },
  };
}

function once(release: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    release();
  };
}

/** sms.concurrent_batches 0: every batch is admitted at once. */
export const NO_BOUND: Admission = { enter: () => Promise.resolve(() => {}), active: 0, waiting: 0 };
