/**
 * The checks every filtered list's query string gets (the admin API's and the console's message search, dead
 * conversions, CRM events), before each list reads its own parameters. Pure.
 */

/** Longest value a list parameter may have: any id or phone number fits, a flood does not. */
export const MAX_PARAMETER_LENGTH = 256;

export interface QueryReadOptions {
  /** Empty values count as absent (an HTML form sends every field); for the API an empty value is an error. */
  form?: boolean;
  /** Parameters another part of the page owns (the console's own), passed over. */
  ignore?: readonly string[];
  /** Parameters kept as given instead of trimmed (the operator's user ids may hold spaces). */
  untrimmed?: readonly string[];
}

/**
 * Each parameter known, given once, not empty and at most MAX_PARAMETER_LENGTH long, in the order given; or the
 * first problem, naming the parameter (a long unknown name is cut in the message).
 */
export function readQueryParameters(
  params: URLSearchParams,
  known: readonly string[],
  options: QueryReadOptions = {},
): { ok: true; values: Array<[name: string, value: string]> } | { ok: false; error: string } {
  const values: Array<[string, string]> = [];
  const seen = new Set<string>();
  for (const [name, raw] of params) {
    if (options.ignore?.includes(name)) continue;
    if (!known.includes(name)) {
      const shown = name.length > 40 ? `${JSON.stringify(name.slice(0, 40))}…` : JSON.stringify(name);
      return { ok: false, error: `${shown}: unknown query parameter; known: ${known.join(', ')}` };
    }
    if (seen.has(name)) return { ok: false, error: `${name}: given more than once` };
    seen.add(name);
    const value = options.untrimmed?.includes(name) ? raw : raw.trim();
    if (value === '' && options.form) continue;
    if (value === '') return { ok: false, error: `${name}: must not be empty` };
    if (value.length > MAX_PARAMETER_LENGTH) return { ok: false, error: `${name}: longer than ${MAX_PARAMETER_LENGTH} characters` };
    values.push([name, value]);
  }
  return { ok: true, values };
}
