/**
 * `strategy: cheapest_delivering` as tables over simulated receipt streams (src/provider-wrappers/cheapest-delivering.ts):
 * each stream is the messages a member took and when their receipts came; the figures are counted from it as the
 * ledger counts them (src/ledger/route-delivery.ts, whose SQL test/ledger/route-delivery.test.ts checks against the
 * same rules), and the decision is taken over them.
 */
import { describe, expect, it } from 'vitest';
import {
  decideCheapestDelivering,
  IN,
  standingAfter,
  type DecisionReason,
  type DeliveryFigures,
  type DeliverySettings,
  type MemberInput,
  type Standing,
} from '../../src/provider-wrappers/cheapest-delivering.js';

const MIN = 60_000;
/** Notify's figures: the last 15 minutes, delivered within 5, and a floor at 85%. */
const settings: DeliverySettings = { windowMs: 15 * MIN, deadlineMs: 5 * MIN, floor: 0.85, minSample: 20, recoverMargin: 0.05, coolDownMs: 5 * MIN };
const T = 100 * MIN;

/** One simulated message: when the member took it, and its receipt (after how long, and what it said), if any came. */
interface Sent {
  member: string;
  at: number;
  receipt?: { after: number; status: 'delivered' | 'undelivered' };
}

/** The figures of one member at `now`, counted as listRecentDelivery counts them. */
function figuresOf(stream: readonly Sent[], member: string, now: number, s: DeliverySettings): DeliveryFigures {
  const f = { sent: 0, judged: 0, onTime: 0 };
  for (const m of stream) {
    if (m.member !== member || m.at < now - s.windowMs || m.at > now) continue;
    f.sent++;
    const final = m.receipt && m.at + m.receipt.after <= now ? m.receipt : undefined;
    if (final || m.at <= now - s.deadlineMs) f.judged++;
    if (final?.status === 'delivered' && final.after <= s.deadlineMs) f.onTime++;
  }
  return f;
}

/** `n` messages of `member` spread over [from, to), each with a receipt `after` later (null: none comes). */
function burst(member: string, n: number, from: number, to: number, after: number | null, status: 'delivered' | 'undelivered' = 'delivered'): Sent[] {
  return Array.from({ length: n }, (_, i) => ({
    member,
    at: from + Math.floor(((to - from) * i) / n),
    ...(after === null ? {} : { receipt: { after, status } }),
  }));
}

const eur = (text: string) => ({ micros: BigInt(Math.round(Number(text) * 1e6)), currency: 'EUR' });
const PRICES: Record<string, ReturnType<typeof eur> | null> = { cheap: eur('0.0200'), mid: eur('0.0350'), dear: eur('0.0500'), free: null };

const inputs = (stream: readonly Sent[], members: readonly string[], now: number): MemberInput[] =>
  members.map((member) => ({ member, price: PRICES[member]!, figures: figuresOf(stream, member, now, settings) }));

const down = (since: number): Standing => ({ kind: 'stepped_down', since, share: 0.5 });

describe('one decision over a receipt stream', () => {
  it.each<[string, Sent[], Record<string, Standing>, number, string[], DecisionReason, Record<string, Standing['kind']>]>([
    [
      'both deliver within a minute: the cheaper first',
      [...burst('cheap', 100, T - 15 * MIN, T, MIN), ...burst('dear', 50, T - 15 * MIN, T, MIN)],
      {},
      T,
      ['cheap', 'dear'],
      'cheapest',
      { cheap: 'in', dear: 'in' },
    ],
    [
      'the cheaper one delivers 30% of its messages after 6 minutes: it steps down, the dearer one goes first',
      [
        ...burst('cheap', 70, T - 15 * MIN, T - 5 * MIN, MIN),
        ...burst('cheap', 30, T - 15 * MIN, T - 5 * MIN, 6 * MIN),
        ...burst('dear', 50, T - 15 * MIN, T, MIN),
      ],
      {},
      T,
      ['dear', 'cheap'],
      'cheaper_stepped_down',
      { cheap: 'stepped_down', dear: 'in' },
    ],
    [
      'receipts that stop count as late once the deadline has passed',
      [...burst('cheap', 40, T - 15 * MIN, T - 10 * MIN, MIN), ...burst('cheap', 40, T - 10 * MIN, T - 5 * MIN, null)],
      {},
      T,
      ['mid', 'cheap'],
      'cheaper_stepped_down',
      { cheap: 'stepped_down' },
    ],
    [
      'messages younger than the deadline without a receipt are not judged yet: a fresh burst does not step it down',
      [...burst('cheap', 40, T - 15 * MIN, T - 6 * MIN, MIN), ...burst('cheap', 200, T - 4 * MIN, T, null)],
      {},
      T,
      ['cheap', 'mid'],
      'cheapest',
      { cheap: 'in' },
    ],
    [
      'undelivered receipts count against the share, however fast',
      [...burst('cheap', 60, T - 15 * MIN, T, 10_000), ...burst('cheap', 40, T - 15 * MIN, T, 10_000, 'undelivered')],
      {},
      T,
      ['mid', 'cheap'],
      'cheaper_stepped_down',
      { cheap: 'stepped_down' },
    ],
    [
      'three slow messages are too few to judge: no step down on them',
      burst('cheap', 3, T - 15 * MIN, T - 6 * MIN, null),
      {},
      T,
      ['cheap', 'mid'],
      'cheapest',
      { cheap: 'in' },
    ],
    ['a member that took nothing at all is taken as delivering', [], {}, T, ['cheap', 'dear'], 'cheapest', { cheap: 'in', dear: 'in' }],
    [
      'a stepped-down member back at the floor is not back yet: it needs floor + margin (90%)',
      [...burst('cheap', 87, T - 15 * MIN, T - 5 * MIN, MIN), ...burst('cheap', 13, T - 15 * MIN, T - 5 * MIN, 6 * MIN)],
      { cheap: down(T - 10 * MIN) },
      T,
      ['mid', 'cheap'],
      'cheaper_stepped_down',
      { cheap: 'stepped_down' },
    ],
    [
      'a stepped-down member at floor + margin after its cool-down comes back',
      [...burst('cheap', 91, T - 15 * MIN, T - 5 * MIN, MIN), ...burst('cheap', 9, T - 15 * MIN, T - 5 * MIN, 6 * MIN)],
      { cheap: down(T - 10 * MIN) },
      T,
      ['cheap', 'mid'],
      'cheapest',
      { cheap: 'in' },
    ],
    [
      'a stepped-down member delivering well stays down within its cool-down',
      burst('cheap', 100, T - 15 * MIN, T - 5 * MIN, MIN),
      { cheap: down(T - 4 * MIN) },
      T,
      ['mid', 'cheap'],
      'cheaper_stepped_down',
      { cheap: 'stepped_down' },
    ],
    [
      'a stepped-down member whose messages have left the window comes back to be judged afresh',
      burst('cheap', 100, T - 40 * MIN, T - 20 * MIN, null),
      { cheap: down(T - 15 * MIN) },
      T,
      ['cheap', 'mid'],
      'cheapest',
      { cheap: 'in' },
    ],
    [
      'every member below the floor: all stepped down, tried by price',
      [...burst('cheap', 50, T - 15 * MIN, T - 5 * MIN, null), ...burst('dear', 50, T - 15 * MIN, T - 5 * MIN, null)],
      {},
      T,
      ['cheap', 'dear'],
      'all_stepped_down',
      { cheap: 'stepped_down', dear: 'stepped_down' },
    ],
    ['a member without a rate ranks after every priced one, wherever it is configured', [], {}, T, ['mid', 'dear', 'free'], 'cheapest', { free: 'in' }],
    [
      'the cheapest stepped down and the rest have no rate: the one without a price goes first',
      burst('cheap', 50, T - 15 * MIN, T - 5 * MIN, null),
      {},
      T,
      ['free', 'cheap'],
      'no_price',
      { cheap: 'stepped_down', free: 'in' },
    ],
  ])('%s', (_label, stream, before, now, expected, reason, standings) => {
    // The members as configured: dearest first (the order must come from prices), or as the expected order lists them.
    const members = [...expected].sort((a, b) => (a === 'free' ? -1 : b === 'free' ? 1 : b.localeCompare(a)));
    const decision = decideCheapestDelivering(inputs(stream, members, now), new Map(Object.entries(before)), now, settings);
    expect(decision.order).toEqual(expected);
    expect(decision.reason).toBe(reason);
    for (const [member, kind] of Object.entries(standings)) expect(decision.standings.get(member)?.kind, member).toBe(kind);
  });

  it('keeps the figures it used, and says why in words', () => {
    const stream = [...burst('cheap', 70, T - 15 * MIN, T - 5 * MIN, MIN), ...burst('cheap', 30, T - 15 * MIN, T - 5 * MIN, 6 * MIN)];
    const decision = decideCheapestDelivering(inputs(stream, ['dear', 'cheap'], T), new Map(), T, settings);
    expect(decision.members.find((m) => m.member === 'cheap')).toMatchObject({
      sent: 100,
      judged: 100,
      onTime: 70,
      share: 0.7,
      judgedEnough: true,
      standing: { kind: 'stepped_down', since: T, share: 0.7 },
      why: 'stepped down: 70 of 100 on time (70.0%), below the floor 85.0%',
    });
  });
});

describe('standingAfter', () => {
  const figures = (judged: number, onTime: number): DeliveryFigures => ({ sent: judged, judged, onTime });
  it.each<[string, Standing, DeliveryFigures, number, Standing['kind']]>([
    ['in, exactly at the floor: stays in', IN, figures(100, 85), T, 'in'],
    ['in, just below: steps down', IN, figures(100, 84), T, 'stepped_down'],
    ['in, below but one short of min_sample: stays in', IN, figures(19, 0), T, 'in'],
    ['down, cooled, at floor + margin: back', down(T - 5 * MIN), figures(100, 90), T, 'in'],
    ['down, cooled, just under floor + margin: stays down', down(T - 5 * MIN), figures(100, 89), T, 'stepped_down'],
    ['down, a millisecond short of the cool-down: stays down', down(T - 5 * MIN + 1), figures(100, 100), T, 'stepped_down'],
    ['down, cooled, too few judged, 3 of them late (at most 15% of min_sample): back', down(T - 5 * MIN), figures(5, 2), T, 'in'],
    ['down, cooled, too few judged but 4 of them late: stays down, they would step it down again', down(T - 5 * MIN), figures(5, 1), T, 'stepped_down'],
    ['down, cooled, nothing judged: back', down(T - 5 * MIN), figures(0, 0), T, 'in'],
  ])('%s', (_label, before, f, now, kind) => {
    expect(standingAfter(before, f, now, settings).standing.kind).toBe(kind);
  });
  it('keeps the moment it stepped down while it stays down', () => {
    expect(standingAfter(down(T - MIN), figures(100, 0), T, settings).standing).toEqual(down(T - MIN));
  });
});

describe('traffic over an hour as Notify describes it', () => {
  /**
   * Ten messages a minute go to the first member of each minute's decision. The cheap member's receipts take 30 s,
   * but 6 minutes from minute 20 to minute 40; the dear member's take 40 s throughout.
   */
  function simulate(slowFrom: number, slowTo: number) {
    const stream: Sent[] = [];
    let standings = new Map<string, Standing>();
    const firsts: string[] = [];
    for (let minute = 0; minute < 90; minute++) {
      const now = minute * MIN;
      const decision = decideCheapestDelivering(inputs(stream, ['dear', 'cheap'], now), standings, now, settings);
      standings = decision.standings;
      const first = decision.order[0]!;
      firsts.push(first);
      const slow = first === 'cheap' && minute >= slowFrom && minute < slowTo;
      const after = first === 'cheap' ? (slow ? 6 * MIN : 30_000) : 40_000;
      stream.push(...burst(first, 10, now, now + MIN, after));
    }
    return firsts;
  }
  /** The minutes at which the first member changed, with the member from then on. */
  const switches = (firsts: string[]) => firsts.flatMap((m, i) => (i === 0 || firsts[i - 1] !== m ? [`${i}:${m}`] : []));

  it('moves away from the cheap member once its late messages pass the floor, and back once its window has emptied', () => {
    const moves = switches(simulate(20, 40));
    // Minute 20's messages are judged late from minute 25 on; the share falls under 85% at minute 27 (80 of 101 on
    // time). Back at minute 42: its last late messages (minute 26's) have left the 15-minute window, and it is fast
    // again by then, so it stays.
    expect(moves).toEqual(['0:cheap', '27:dear', '42:cheap']);
  });

  it('steps the cheap member down again when it is still slow after it came back', () => {
    const moves = switches(simulate(20, 90));
    // Each return costs 7 minutes of slow messages (5 before they are late, 2 to pass the floor), every 22 minutes.
    expect(moves).toEqual(['0:cheap', '27:dear', '42:cheap', '49:dear', '64:cheap', '71:dear', '86:cheap']);
  });
});
