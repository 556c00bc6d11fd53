/**
 * The X-Crm-* headers the CRM puts on every request (docs/crm-interface.md §C). They are stored with each credit so a
 * later bonus event can carry them back as `crm_references`, and four of them make up the one-action key.
 */

/** crm_references key → request header (header names are case-insensitive). */
export const CRM_HEADERS = {
  id: 'x-crm-id',
  action_id: 'x-crm-actionid',
  action_group_id: 'x-crm-actiongroupid',
  action_communication_profile_id: 'x-crm-actioncommunicationprofileid',
  activity_id: 'x-crm-activityid',
  trigger_hash: 'x-crm-triggerhash',
  player_origin_id: 'x-crm-playeroriginid',
} as const;

export type CrmReferences = { -readonly [K in keyof typeof CRM_HEADERS]: string | null };

/** A header as the interface writes it (docs/crm-interface.md §C): `x-crm-activityid` → `X-Crm-Activityid`. */
export const crmSpelling = (name: string) => name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());

/** Letters and digits only: `X-Crm-Activity-Id`, `x_crm_activityid` and `x-crm-activityid` all read `xcrmactivityid`. */
const squeezed = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, '');
const SQUEEZED = new Map(Object.values(CRM_HEADERS).map((name) => [squeezed(name), name]));
const READ: ReadonlySet<string> = new Set(Object.values(CRM_HEADERS));

/**
 * Headers that are one of the CRM's X-Crm-* headers spelt another way (`X-Crm-Activity-Id`, `X_Crm_TriggerHash`), as
 * a proxy or a hand-written test may rename them. Such a header is not read, so a credit carrying it would have no
 * one-action key and a repeat would credit again: the route refuses it instead, naming the header the CRM sends.
 */
export function misspeltCrmHeaders(names: Iterable<string>): Array<{ given: string; expected: string }> {
  const found: Array<{ given: string; expected: string }> = [];
  for (const given of names) {
    const expected = SQUEEZED.get(squeezed(given));
    if (expected !== undefined && !READ.has(given.toLowerCase())) found.push({ given, expected: crmSpelling(expected) });
  }
  return found;
}

export function readCrmReferences(header: (name: string) => string | undefined): CrmReferences {
  const refs = {} as CrmReferences;
  for (const [key, name] of Object.entries(CRM_HEADERS) as Array<[keyof CrmReferences, string]>) {
    const value = header(name)?.trim();
    refs[key] = value ? value : null;
  }
  return refs;
}

/**
 * "Only one action with the same activity_id, action_id, user_id and trigger hash is received" (docs/crm-interface.md §C). Without the
 * three header values there is nothing to recognise a repeat by, so such a request gets no key and always counts.
 */
export function oneActionKey(refs: CrmReferences, userId: string): string | null {
  if (refs.activity_id === null || refs.action_id === null || refs.trigger_hash === null) return null;
  return JSON.stringify([refs.activity_id, refs.action_id, userId, refs.trigger_hash]);
}

/** The headers to pass on to the operator platform, so it can apply the same rule and keep the references. */
export function crmHeadersOf(refs: CrmReferences): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, name] of Object.entries(CRM_HEADERS) as Array<[keyof CrmReferences, string]>) {
    const value = refs[key];
    if (value !== null) headers[name] = value;
  }
  return headers;
}

const INTEGER_KEYS = new Set<keyof CrmReferences>(['action_id', 'action_group_id', 'action_communication_profile_id', 'activity_id', 'player_origin_id']);

/**
 * The `crm_references` object of a bonus event, typed as in the docs' example: id and trigger_hash strings, the other
 * ids integers (a header value that is not an integer is kept as the string it was). Absent headers are left out.
 * A double would round an integer beyond 2^53, so by default such a one stays the string it was; a caller that
 * writes JSON text exactly (the relay, src/http/exact-json.ts) passes `beyondDouble` to write it as the integer it is.
 */
export function crmReferencesObject<Exact = never>(
  refs: CrmReferences,
  beyondDouble: (digits: string) => Exact | string = (digits) => digits,
): Record<string, string | number | Exact> {
  const out: Record<string, string | number | Exact> = {};
  for (const key of Object.keys(CRM_HEADERS) as Array<keyof CrmReferences>) {
    const value = refs[key];
    if (value === null) continue;
    if (!INTEGER_KEYS.has(key) || !/^-?\d+$/.test(value)) out[key] = value;
    else if (Number.isSafeInteger(Number(value))) out[key] = Number(value);
    // Written without leading zeros, as a JSON integer must be.
    else out[key] = beyondDouble(BigInt(value).toString());
  }
  return out;
}
