/**
 * A player's number as an inbound SMS names its sender: E.164 from the record's `mobile_prefix` and `mobile`.
 * A mobile written internationally (`+…` or `00…`) stands alone; otherwise the national number's trunk zeros are
 * dropped (`+44` and `07700 900123` make `+447700900123`). Without digits or a prefix there is no number.
 * The migration 2026-11-24-41-consents applies the same rule to rows loaded before it.
 */
export function playerE164(prefix: string, mobile: string): string | null {
  const m = mobile.trim();
  if (/^(\+|00)/.test(m)) {
    const digits = m.replace(/^00/, '').replace(/\D/g, '');
    return digits ? `+${digits}` : null;
  }
  const digits = m.replace(/\D/g, '').replace(/^0+/, '');
  const code = prefix.replace(/\D/g, '');
  return digits && code ? `+${code}${digits}` : null;
}
