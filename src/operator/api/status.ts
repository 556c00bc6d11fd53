/** The HTTP status for each backend outcome (docs/design.md §4: never 4xx for what a retry would fix, never 5xx for what it won't). */
import type { BackendErrorKind } from '../backend.js';

const STATUS = {
  not_found: 404,
  invalid: 400,
  busy: 503,
  unsupported: 501,
  bad_upstream: 502,
  timeout: 504,
  bad_record: 500,
} as const satisfies Record<BackendErrorKind, number>;

export function statusOf(kind: BackendErrorKind): (typeof STATUS)[BackendErrorKind] {
  return STATUS[kind];
}
