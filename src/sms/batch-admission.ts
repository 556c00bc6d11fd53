/**
 * Bounds how many batch requests are worked on at once (sms.concurrent_batches). A batch holds every one of its
 * messages in memory until its answer (the body, the prepared messages, their claims and answers: a few KB each), so
 * fifty connections sending batches of 500 at once keep 25,000 messages alive and the heap grows with them. The CPU
 * is the limit either way, so a request over the bound waits, its body still unread (in the socket, not in our
 * heap), and is admitted in arrival order as earlier batches answer. Nothing is acknowledged before it is
 * committed, so waiting changes no promise made to the CRM.
 * A request never waits longer than `maxWaitMs` (below server.request_timeout, which would otherwise answer 408
 * to a request whose body we have not read yet): after that it is worked on anyway, over the bound.
 */
import type { MiddlewareHandler } from 'hono';

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

/** The middleware form: the slot is held until the handler has produced its answer. */
export function admitBatches(admission: Admission): MiddlewareHandler {
  return async (_c, next) => {
    const release = await admission.enter();
    try {
      await next();
    } finally {
      release();
    }
  };
}
