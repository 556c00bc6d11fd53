import { describe, expect, it } from 'vitest';
import { createAdmission } from '../src/sms/batch-admission.js';

describe('batch admission (sms.concurrent_batches)', () => {
  it('admits up to the bound at once, then one waiting request per release, in arrival order', async () => {
    const admission = createAdmission(2, 60_000);
    const first = await admission.enter();
    const second = await admission.enter();
    const order: string[] = [];
    const third = admission.enter().then((release) => (order.push('third'), release));
    const fourth = admission.enter().then((release) => (order.push('fourth'), release));
    await new Promise((resolve) => setImmediate(resolve));
    expect({ active: admission.active, waiting: admission.waiting, order }).toEqual({ active: 2, waiting: 2, order: [] });
    first();
    first(); // a second call of the same release frees nothing more
    const releaseThird = await third;
    expect({ active: admission.active, waiting: admission.waiting, order }).toEqual({ active: 2, waiting: 1, order: ['third'] });
    second();
    const releaseFourth = await fourth;
    expect(order).toEqual(['third', 'fourth']);
    releaseThird();
    releaseFourth();
    expect({ active: admission.active, waiting: admission.waiting }).toEqual({ active: 0, waiting: 0 });
  });

  it('lets a request that waited too long through over the bound, holding no slot', async () => {
    const admission = createAdmission(1, 20);
    const holder = await admission.enter();
    const late = await admission.enter(); // resolves after 20 ms without a slot
    expect({ active: admission.active, waiting: admission.waiting }).toEqual({ active: 1, waiting: 0 });
    late();
    expect(admission.active).toBe(1);
    holder();
    expect(admission.active).toBe(0);
  });
});
