/**
 * Consent entries as the CRM reads them and as the ledger stores them. Products (UK product-level consents) are
 * kept only for an opted-in channel: opted out means out of every product (docs/operator-api.md "Product-level
 * consents"), and an empty list is stored as no split.
 */
import type { ConsentRow } from '../../ledger/operator-data.js';
import type { ConsentEntry, ConsentType } from '../../crm/shapes.js';

export function consentRowOf(userId: string, entry: ConsentEntry): ConsentRow {
  const products = entry.opted_in && entry.products && entry.products.length > 0 ? JSON.stringify([...new Set(entry.products)]) : null;
  return { user_id: userId, type: entry.type, opted_in: entry.opted_in ? 1 : 0, products };
}

export function consentEntryOf(type: ConsentType, row: Pick<ConsentRow, 'opted_in' | 'products'> | undefined): ConsentEntry {
  const entry: ConsentEntry = { opted_in: row?.opted_in === 1, type };
  if (row?.opted_in === 1 && row.products) entry.products = JSON.parse(row.products) as string[];
  return entry;
}
