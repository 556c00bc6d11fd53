/**
 * The shutdown's named steps (src/kit/shutdown.ts): stages run in their fixed order whatever order the builders
 * registered in, a stage's steps in the order added; the deadline names the step still running and cuts what hangs;
 * a timer at a share of the budget fires only while the shutdown lasts.
 */
import { describe, expect, it } from 'vitest';
import { createShutdown } from '../../src/kit/shutdown.js';

describe('the shutdown', () => {
  it('runs the stages in their order and the steps of a stage in the order they were added', async () => {
    const shutdown = createShutdown(1_000, 'server.shutdown_timeout');
    const ran: string[] = [];
    const step = (name: string) => () => void ran.push(name);
    shutdown.add('ledger', 'closing the ledger', step('ledger'));
    shutdown.add('services', 'exporting the last spans', step('spans'));
    shutdown.add('outboxes', 'stopping the conversion outbox', step('conversions'));
    shutdown.add('listeners', 'finishing open requests', step('listeners'));
    shutdown.add('services', 'leaving the instance count', step('instances'));
    shutdown.add('providers', 'closing the providers', step('providers'));
    shutdown.add('outboxes', 'stopping the credit outbox', step('credits'));
    shutdown.add('sends', 'stopping the sends', step('sends'));
    await shutdown.run();
    expect(ran).toEqual(['sends', 'providers', 'listeners', 'conversions', 'credits', 'spans', 'instances', 'ledger']);
  });

  it('gives up at the deadline naming the step still running, after cutting what hangs; later steps do not run', async () => {
    const shutdown = createShutdown(100, 'server.shutdown_timeout');
    const ran: string[] = [];
    let cut = false;
    shutdown.add('providers', 'closing the providers', () => void ran.push('providers'));
    shutdown.add('listeners', 'finishing open requests', () => new Promise<void>(() => {}));
    shutdown.add('ledger', 'closing the ledger', () => void ran.push('ledger'));
    shutdown.atDeadline(() => {
      cut = true;
    });
    const started = Date.now();
    await expect(shutdown.run()).rejects.toThrow('shutdown still finishing open requests after server.shutdown_timeout (100 ms)');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(cut).toBe(true);
    expect(ran).toEqual(['providers']);
  });

  it('fires a timer at a share of the budget while a step still runs, and never once the shutdown ended', async () => {
    const slow = createShutdown(1_000, 'server.shutdown_timeout');
    let abandoned = false;
    slow.after(20, () => {
      abandoned = true;
    });
    slow.add('providers', 'closing the providers', () => new Promise((resolve) => setTimeout(resolve, 60)));
    await slow.run();
    expect(abandoned).toBe(true);

    const quick = createShutdown(1_000, 'server.shutdown_timeout');
    let fired = false;
    quick.after(20, () => {
      fired = true;
    });
    await quick.run();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(fired).toBe(false);
  });

  it("rejects with a step's own error and runs no step after it", async () => {
    const shutdown = createShutdown(1_000, 'server.shutdown_timeout');
    let ledgerClosed = false;
    shutdown.add('outboxes', 'stopping the event outbox', () => Promise.reject(new Error('transport close failed')));
    shutdown.add('ledger', 'closing the ledger', () => {
      ledgerClosed = true;
    });
    await expect(shutdown.run()).rejects.toThrow('transport close failed');
    expect(ledgerClosed).toBe(false);
  });
});
