/**
 * The checks that refuse a configuration whose route rules cannot mean what they say (docs/routing.md "Rules"): each
 * problem named by its key, at load and at a reload alike. The rules' schema is route-rules-config.ts.
 */
import { callingCodeOf } from '../kit/phone-number.js';
import type { HoursWindow, RouteRule, RoutingConfig, RuleMatch } from './route-rules-config.js';

/** The route blocks' fields the rules are checked against. */
interface RouteFields {
  type: string;
  aliases?: readonly string[];
  members?: readonly string[];
  rules?: readonly RouteRule[];
  weights?: Readonly<Record<string, number>> | undefined;
}

type Issue = (path: Array<string | number>, message: string) => void;

/** The country of a prefix when its calling code is one country's alone (+33 → FR; +1 → several, undefined). */
function soleCountryOf(p: string, countryOfCode: (code: string) => string[]): { code: string; countries: string[] } | undefined {
  for (let length = 1; length <= 3 && length < p.length; length++) {
    const code = p.slice(1, 1 + length);
    const countries = countryOfCode(code);
    if (countries.length > 0) return { code, countries };
  }
  return undefined;
}

/** Whether every message `later` matches also matches `earlier`: then `later` can never be chosen. */
function shadows(earlier: RuleMatch, later: RuleMatch, countriesOfCode: (code: string) => string[] = () => []): boolean {
  const covers = <T>(a: readonly T[] | undefined, b: readonly T[] | undefined) => a === undefined || (b !== undefined && b.every((x) => a.includes(x)));
  // Countries and prefixes cover each other too: `+55` takes every Brazilian number, and BR every number under `+5511`.
  const codeOf = (country: string) => `+${callingCodeOf(country) ?? ''}`;
  const countriesCovered =
    covers(earlier.countries, later.countries) ||
    (later.countries === undefined &&
      later.prefixes !== undefined &&
      later.prefixes.every((p) => {
        const sole = soleCountryOf(p, countriesOfCode);
        return sole !== undefined && sole.countries.length === 1 && earlier.countries!.includes(sole.countries[0]!);
      }));
  const prefixesCovered =
    earlier.prefixes === undefined ||
    (later.prefixes !== undefined && later.prefixes.every((p) => earlier.prefixes!.some((q) => p.startsWith(q)))) ||
    (later.prefixes === undefined && later.countries !== undefined && later.countries.every((c) => earlier.prefixes!.some((q) => codeOf(c).startsWith(q))));
  const hoursCovered = earlier.hours === undefined || (later.hours !== undefined && windowCovers(earlier.hours, later.hours));
  const holidaysCovered = earlier.holidays === undefined || earlier.holidays === later.holidays;
  return (
    countriesCovered &&
    prefixesCovered &&
    covers(earlier.brands, later.brands) &&
    covers(earlier.provider_names, later.provider_names) &&
    covers(earlier.senders, later.senders) &&
    covers(earlier.number_types, later.number_types) &&
    covers(earlier.days, later.days) &&
    hoursCovered &&
    holidaysCovered
  );
}

/** The minutes of the day a window holds. */
function minutesOf(w: HoursWindow): Set<number> {
  const out = new Set<number>();
  for (let m = w.from; m !== w.to % 1440; m = (m + 1) % 1440) out.add(m);
  return out;
}

function windowCovers(outer: HoursWindow, inner: HoursWindow): boolean {
  const o = minutesOf(outer);
  for (const m of minutesOf(inner)) if (!o.has(m)) return false;
  return true;
}

/**
 * Checks a route's rules against the configuration: members that are configured providers (not routes), weights
 * that name members, a rule that can never match (prefixes outside its countries, provider_names the route does not
 * answer to, a rule after a catch-all or covered by an earlier rule: overlapping prefixes in the wrong order), two
 * rules of one name. Each problem names its key.
 */
export function checkRouteRules(
  providers: Readonly<Record<string, RouteFields>>,
  issue: Issue,
  countriesOfCode: (code: string) => string[],
  routing?: Pick<RoutingConfig, 'countries' | 'brands' | 'holidays'>,
): void {
  // Countries some brand may send to, when the gateway has a list for every brand: a rule for any other never matches.
  const reachable =
    routing?.countries === undefined ? undefined : new Set([...routing.countries, ...Object.values(routing.brands).flatMap((b) => b.countries)]);
  for (const [name, route] of Object.entries(providers)) {
    const rules = route.rules;
    if (route.type !== 'route' || !rules) continue;
    const names = new Set([name, ...(route.aliases ?? [])].map((n) => n.toLowerCase()));
    const ruleNames = new Set<string>();
    rules.forEach((rule, i) => {
      const at = (...rest: Array<string | number>) => ['providers', name, 'rules', i, ...rest];
      if (rule.name !== undefined) {
        if (ruleNames.has(rule.name) || /^\d+$/.test(rule.name))
          issue(at('name'), `"${rule.name}" is ${/^\d+$/.test(rule.name) ? 'a number (rules are numbered already)' : 'the name of an earlier rule'}`);
        ruleNames.add(rule.name);
      }
      const seen = new Set<string>();
      rule.members.forEach((member, j) => {
        if (!Object.hasOwn(providers, member)) issue(at('members', j), `"${member}" is not a configured provider`);
        else if (providers[member]!.type === 'route') issue(at('members', j), `"${member}" is a route; members must be providers`);
        if (seen.has(member)) issue(at('members', j), `"${member}" is listed twice`);
        seen.add(member);
      });
      for (const key of Object.keys(rule.weights ?? {})) if (!seen.has(key)) issue(at('weights', key), `"${key}" is not a member of this rule`);
      const m = rule.match;
      m.provider_names?.forEach((p, j) => {
        if (!names.has(p))
          issue(
            at('match', 'provider_names', j),
            `"${p}" never picks route ${name} (its name and aliases: ${[...names].join(', ')}): the rule can never match`,
          );
      });
      m.countries?.forEach((c, j) => {
        if (reachable && !reachable.has(c))
          issue(at('match', 'countries', j), `${c} is in no list of routing.countries or routing.brands: the rule can never match it`);
      });
      if (m.holidays === 'only') {
        const listed = (m.countries ?? Object.keys(routing?.holidays ?? {})).filter((c) => (routing?.holidays[c]?.length ?? 0) > 0);
        if (listed.length === 0)
          issue(at('match', 'holidays'), `no date in routing.holidays for ${m.countries?.join(', ') ?? 'any country'}: the rule can never match`);
      }
      if (m.countries && m.prefixes) {
        m.prefixes.forEach((p, j) => {
          const sole = soleCountryOf(p, countriesOfCode);
          if (sole && !sole.countries.some((c) => m.countries!.includes(c)))
            issue(at('match', 'prefixes', j), `${p} lies in ${sole.countries.join('/')}, outside match.countries: the rule can never match`);
        });
      }
      for (let k = 0; k < i; k++) {
        const earlier = rules[k]!;
        if (shadows(earlier.match, m, countriesOfCode)) {
          const label = earlier.name ? `rule ${k + 1} (${earlier.name})` : `rule ${k + 1}`;
          issue(
            at('match'),
            Object.keys(earlier.match).length === 0
              ? `comes after ${label}, a catch-all: it can never match`
              : `every message it matches is matched first by ${label}: it can never match (put the narrower rule first)`,
          );
          break;
        }
      }
    });
  }
}
