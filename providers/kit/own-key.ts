/**
 * Lookups in tables keyed by text from outside (provider statuses, error codes, field names). `table[key]` would
 * also find what every object inherits (`constructor`, `__proto__`, `toString`): only the table's own keys count,
 * and anything else is unknown (docs/design.md §8).
 */
export function ownValue<V>(table: Readonly<Record<PropertyKey, V>>, key: PropertyKey): V | undefined {
  return Object.hasOwn(table, key) ? table[key as keyof typeof table] : undefined;
}
