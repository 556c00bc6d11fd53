/**
 * Which rule of a route a message takes (docs/routing.md): the first whose `match` it meets, else the route's own
 * members (the catch-all). A pure function of the message's facts and the moment it is judged, tested by table
 * (test/provider-wrappers/route-rules.test.ts). The decision carries the recipient's local time it was judged in,
 * so that a later check on the same rule (a quiet-hours window, say) reads the same clock without a second parse.
 */
import type { RouteRule, RuleMatch } from '../config/route-rules-config.js';
import { DAYS } from '../config/route-rules-config.js';
import { localTimeIn, zoneOfNumber, type LocalTime } from '../kit/time-zones.js';

/** What a rule can look at: the recipient as read, the activity's brand, the CRM's provider_name and sender. */
export interface MessageFacts {
  /** The recipient in E.164. */
  e164: string;
  /** Its country as read (src/sms/recipient-reading.ts); undefined when the metadata places it nowhere. */
  country: string | undefined;
  /** activity.brand_id as text, or null. */
  brand: string | null;
  /** The provider_name the CRM sent (or sms.default_provider), lower case. */
  providerName: string | null;
  /** The sender_name the CRM sent, trimmed, or null. */
  sender: string | null;
  /** The number's type (libphonenumber-js getType), when it was asked: undefined when unknown or not asked. */
  numberType: string | undefined;
  /** Epoch ms of the moment the message is judged: its local time is read at this instant. */
  at: number;
  /**
   * The recipient's local time at `at`, when the caller has read it already (recipientLocalTime): then the rules read
   * this one and no zone is looked up again. Absent: read from the number when a rule needs it.
   */
  local?: LocalTime | null;
}

/** Public holidays by country, and the operator's time zones by prefix (`routing.holidays`, `routing.zones`). */
export interface RuleCalendar {
  holidays: ReadonlyMap<string, ReadonlySet<string>>;
  zones: ReadonlyMap<string, string>;
}

export interface RuleDecision {
  /** 1-based position of the rule in `rules`; 0 for the catch-all (the route's own members). */
  rule: number;
  /** The rule's name when it has one. */
  name: string | undefined;
  /**
   * The recipient's local time and zone, when a rule needed it or the zone is known: null where the zone could not
   * be told from the number (a rule on hours or days then does not match).
   */
  local: LocalTime | null;
}

const NO_CALENDAR: RuleCalendar = { holidays: new Map(), zones: new Map() };

const needsClock = (m: RuleMatch) => m.hours !== undefined || m.days !== undefined || m.holidays !== undefined;

/** The recipient's local time at `facts.at`, or null when no zone is known for the number. */
export function recipientLocalTime(facts: Pick<MessageFacts, 'e164' | 'country' | 'at'>, calendar: RuleCalendar = NO_CALENDAR): LocalTime | null {
  const zone = zoneOfNumber(facts.e164, facts.country, calendar.zones);
  return zone === undefined ? null : localTimeIn(zone, facts.at);
}

function inWindow(minutes: number, from: number, to: number): boolean {
  return from < to ? minutes >= from && minutes < to : minutes >= from || minutes < to;
}

/** Whether the message meets every key the match gives; `clock` is asked at most once, and only for keys on time. */
export function meetsMatch(m: RuleMatch, facts: MessageFacts, clock: () => LocalTime | null, calendar: RuleCalendar = NO_CALENDAR): boolean {
  if (m.countries && (facts.country === undefined || !m.countries.includes(facts.country))) return false;
  if (m.prefixes && !m.prefixes.some((p) => facts.e164.startsWith(p))) return false;
  if (m.brands && (facts.brand === null || !m.brands.includes(facts.brand))) return false;
  if (m.provider_names && (facts.providerName === null || !m.provider_names.includes(facts.providerName))) return false;
  if (m.senders && (facts.sender === null || !m.senders.includes(facts.sender))) return false;
  if (m.number_types && (facts.numberType === undefined || !m.number_types.includes(facts.numberType as never))) return false;
  if (!needsClock(m)) return true;
  const local = clock();
  if (!local) return false;
  if (m.hours && !inWindow(local.minutes, m.hours.from, m.hours.to)) return false;
  if (m.days && !m.days.includes(DAYS[local.weekday]!)) return false;
  if (m.holidays) {
    const holiday = facts.country !== undefined && (calendar.holidays.get(facts.country)?.has(local.date) ?? false);
    if (m.holidays === 'only' ? !holiday : holiday) return false;
  }
  return true;
}

/** The first rule the message meets, else the catch-all. */
export function chooseRule(rules: readonly RouteRule[] | undefined, facts: MessageFacts, calendar: RuleCalendar = NO_CALENDAR): RuleDecision {
  let local: LocalTime | null | undefined = facts.local;
  const clock = () => (local === undefined ? (local = recipientLocalTime(facts, calendar)) : local);
  for (const [i, rule] of (rules ?? []).entries()) {
    if (meetsMatch(rule.match, facts, clock, calendar)) return { rule: i + 1, name: rule.name, local: local ?? null };
  }
  return { rule: 0, name: undefined, local: local ?? null };
}

/** The rule's key in the admin API and on the message: its name, else its number; the catch-all is `catch-all`. */
export function ruleKey(decision: Pick<RuleDecision, 'rule' | 'name'>): string {
  return decision.rule === 0 ? CATCH_ALL : (decision.name ?? String(decision.rule));
}

export const CATCH_ALL = 'catch-all';
