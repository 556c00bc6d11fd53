/**
 * `strategy: cheapest_delivering` (docs/routing.md "Cheapest member that delivers"): per country, the members ordered
 * by their price (costs.rates), those whose recent delivery fell below the floor stepped down behind the others, as
 * GOV.UK Notify lowers a provider that delivers slowly and restores it later. A pure function of the members' prices
 * and delivery figures, their standings before, and the time, tested by table over simulated receipt streams
 * (test/provider-wrappers/cheapest-delivering.test.ts); delivery-choice.ts keeps the standings and the figures.
 */

/** What a route's `delivery` block says, in milliseconds. */
export interface DeliverySettings {
  windowMs: number;
  deadlineMs: number;
  floor: number;
  minSample: number;
  recoverMargin: number;
  coolDownMs: number;
}

/** A member's messages to one country created in the window, as the ledger counted them (src/ledger/route-delivery.ts). */
export interface DeliveryFigures {
  /** Messages the member took (submitted). */
  sent: number;
  /** Of those, the ones whose outcome is known: a final status, or no receipt past the deadline (late). */
  judged: number;
  /** Of those, the ones delivered within the deadline, by a receipt. */
  onTime: number;
}

/** The price of one segment, in micro-units of a currency (src/kit/money.ts). */
export interface MemberPrice {
  micros: bigint;
  currency: string;
}

export type Standing = { kind: 'in' } | { kind: 'stepped_down'; since: number; share: number | null };

export const IN: Standing = { kind: 'in' };

export interface MemberInput {
  member: string;
  price: MemberPrice | null;
  figures: DeliveryFigures | undefined;
}

/** Why the first member of the order was chosen (the `reason` of sms_gateway_route_decisions_total). */
export type DecisionReason = 'cheapest' | 'cheaper_stepped_down' | 'all_stepped_down' | 'no_price';

/** One member as the decision saw it: the figures it used. */
export interface MemberView {
  member: string;
  price: MemberPrice | null;
  sent: number;
  judged: number;
  onTime: number;
  /** onTime / judged; null with nothing judged. */
  share: number | null;
  /** Whether the share counted (judged ≥ min_sample). */
  judgedEnough: boolean;
  standing: Standing;
  /** Why the standing is what it is, in words for the console. */
  why: string;
}

export interface Decision {
  /** Members in the order the message tries them: delivering ones by price, then stepped-down ones by price. */
  order: string[];
  reason: DecisionReason;
  /** Each member's standing after this decision. */
  standings: Map<string, Standing>;
  members: MemberView[];
}

const NO_FIGURES: DeliveryFigures = { sent: 0, judged: 0, onTime: 0 };

const pct = (share: number | null) => (share === null ? '—' : `${(share * 100).toFixed(1)}%`);

/**
 * A member's standing after reading its figures at `now`. It steps down when enough of its messages are judged and
 * too few were delivered on time. It comes back once `cool_down` has passed since, when its share reaches
 * floor + recover_margin, or when fewer than min_sample of its messages are judged in the window and so few of them
 * were late that min_sample judged on the whole would still reach the floor if the rest were on time (it took no
 * traffic while stepped down, and its late messages have left the window: fresh ones then show whether it recovered).
 */
export function standingAfter(before: Standing, figures: DeliveryFigures, now: number, s: DeliverySettings): { standing: Standing; why: string } {
  const share = figures.judged > 0 ? figures.onTime / figures.judged : null;
  const enough = figures.judged >= s.minSample;
  const seen = `${figures.onTime} of ${figures.judged} on time (${pct(share)})`;
  if (before.kind === 'in') {
    if (enough && share! < s.floor)
      return { standing: { kind: 'stepped_down', since: now, share }, why: `stepped down: ${seen}, below the floor ${pct(s.floor)}` };
    return { standing: IN, why: enough ? `${seen}, at or above the floor ${pct(s.floor)}` : `${seen}: fewer than ${s.minSample} judged, taken as delivering` };
  }
  if (now - before.since < s.coolDownMs) return { standing: before, why: `stepped down, cooling down: ${seen}` };
  const back = Math.min(1, s.floor + s.recoverMargin);
  if (!enough) {
    // Its late messages still in the window would step it down again by themselves once fresh ones (on time) bring
    // the judged count to min_sample: it waits until few enough are left.
    const late = figures.judged - figures.onTime;
    if (late <= (1 - s.floor) * s.minSample + 1e-9)
      return { standing: IN, why: `back: ${seen}, fewer than ${s.minSample} judged and too few late to hold it down` };
    return { standing: before, why: `stepped down: ${seen}, ${late} late still in the window` };
  }
  if (share! >= back) return { standing: IN, why: `back: ${seen}, at or above ${pct(back)}` };
  return { standing: before, why: `stepped down: ${seen}, below ${pct(back)} to come back` };
}

/** Ascending price; a member without a price (or in another currency than the cheapest's) after every priced one. */
function byPrice(a: MemberInput & { i: number }, b: MemberInput & { i: number }, currency: string | undefined): number {
  const pa = a.price && a.price.currency === currency ? a.price.micros : null;
  const pb = b.price && b.price.currency === currency ? b.price.micros : null;
  if (pa !== null && pb !== null && pa !== pb) return pa < pb ? -1 : 1;
  if (pa === null && pb !== null) return 1;
  if (pb === null && pa !== null) return -1;
  return a.i - b.i;
}

/** Pure: the order in which one message to one country tries the members, the standings after, and the figures used. */
export function decideCheapestDelivering(
  members: readonly MemberInput[],
  before: ReadonlyMap<string, Standing>,
  now: number,
  settings: DeliverySettings,
): Decision {
  const standings = new Map<string, Standing>();
  const views: MemberView[] = [];
  for (const m of members) {
    const figures = m.figures ?? NO_FIGURES;
    const { standing, why } = standingAfter(before.get(m.member) ?? IN, figures, now, settings);
    standings.set(m.member, standing);
    const share = figures.judged > 0 ? figures.onTime / figures.judged : null;
    views.push({ member: m.member, price: m.price, ...figures, share, judgedEnough: figures.judged >= settings.minSample, standing, why });
  }
  // Prices in other currencies cannot be compared (the configuration refuses a route that mixes them): the cheapest
  // member's currency decides, as the rate book's estimate of a route does.
  const currency = members.reduce<MemberPrice | null>(
    (low, m) => (m.price && (!low || (m.price.currency === low.currency && m.price.micros < low.micros)) ? m.price : low),
    null,
  )?.currency;
  const ranked = members.map((m, i) => ({ ...m, i })).sort((a, b) => byPrice(a, b, currency));
  const delivering = ranked.filter((m) => standings.get(m.member)!.kind === 'in');
  const stepped = ranked.filter((m) => standings.get(m.member)!.kind !== 'in');
  const order = [...delivering, ...stepped].map((m) => m.member);
  const first = delivering[0] ?? ranked[0];
  let reason: DecisionReason;
  if (!first) reason = 'no_price';
  else if (delivering.length === 0) reason = 'all_stepped_down';
  else if (!first.price || first.price.currency !== currency) reason = 'no_price';
  else if (stepped.some((m) => byPrice(m, first, currency) < 0)) reason = 'cheaper_stepped_down';
  else reason = 'cheapest';
  return { order: delivering.length === 0 ? ranked.map((m) => m.member) : order, reason, standings, members: views };
}
