/**
 * Where the operator endpoints get their answers (docs/design.md §1 "operator"). Two implementations: `sql` keeps the player
 * data in the gateway's own database (loaded through the admin API or `import users`), `http` asks the operator's
 * platform. Backends return values, never throw for an expected outcome; the routes alone turn `kind` into a status.
 */
import type { BlocksRecord, BonusList, ConsentEntry, ConsentsRecord, ReconciliationField, UserRecord } from '../crm/shapes.js';
import type { CrmReferences } from '../crm/references.js';

/**
 * not_found: no such user (404). invalid: the request cannot succeed as it is (400). busy: the same credit is being
 * handled right now by another instance (503, retry). unsupported: the operator platform does not implement this
 * reconciliation field (501). bad_upstream: the operator platform answered something the CRM would reject, or an
 * error (502). timeout: it did not answer in time (504). bad_record: a record stored before the CRM's rules were
 * checked on loading breaks them (500: loading it again with PUT /admin/users fixes it).
 */
export type BackendErrorKind = 'not_found' | 'invalid' | 'busy' | 'unsupported' | 'bad_upstream' | 'timeout' | 'bad_record';

export type BackendResult<T> = { ok: true; value: T } | { ok: false; kind: BackendErrorKind; error: string };

export class BackendError extends Error {
  constructor(
    readonly kind: BackendErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'BackendError';
  }
}

/**
 * The list's own source reported an error in its answer (the operator platform's `200 {"error"}`): passed on to the
 * CRM as `200 {"error"}` like any failure to read the list, wherever in the list it came.
 */
export class ReconciliationListError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReconciliationListError';
  }
}

export interface CreditRequest {
  kind: 'bonus' | 'funds';
  userId: string;
  bonusCode: string;
  /** The nearest double (the ledger's column); the amount as written is the body's. */
  amount: number | null;
  currency: string | null;
  /**
   * The body as the CRM sent it, fields we ignore included: stored, and forwarded by the http backend. Its numbers a
   * double would change are RawJson (src/http/exact-json.ts parseExact): write it with stringifyExact.
   */
  body: unknown;
  refs: CrmReferences;
}

export interface CreditAnswer {
  creditId: string;
  /** True when this request repeated one already credited (one-action rule): nothing was credited again. */
  repeated: boolean;
}

/** User ids encoded as JSON strings and joined by commas (`"a","b"`), ready to be written into the answer. */
export interface IdPage {
  json: string;
  count: number;
}

/**
 * A reconciliation run: pages of user ids in a stable order, then the run's timestamp. Iterating throws a
 * BackendError when the data cannot be read; the route turns one thrown before the first page into a status and
 * one thrown later into the `error` field of the streamed body.
 */
export interface ReconciliationRun {
  pages: AsyncIterable<IdPage>;
  /** RFC 3339 time the list describes; read after the last page. */
  timestamp(): string;
}

/** Where a player is, as their record says (the CRM's user details `country` and `mobile_prefix`; either may be ""). */
export interface PlayerCountry {
  /** ISO 3166 alpha-2, as the record holds it. */
  country: string;
  /** "+" and the calling code, as the record holds it (`+356`). */
  mobilePrefix: string;
  /** The player's own number in E.164 (mobile_prefix and mobile, or a mobile written with "+"), when there is one. */
  mobile: string | null;
}

export interface OperatorBackend {
  readonly name: 'sql' | 'http';
  userDetails(userId: string): Promise<BackendResult<UserRecord>>;
  userConsents(userId: string): Promise<BackendResult<ConsentsRecord>>;
  /** Applies the listed changes; types not listed keep their value. `body` is the request as received. */
  updateConsents(userId: string, changes: ConsentEntry[], body: unknown): Promise<BackendResult<void>>;
  userBlocks(userId: string): Promise<BackendResult<BlocksRecord>>;
  bonusList(): Promise<BackendResult<BonusList>>;
  credit(request: CreditRequest): Promise<BackendResult<CreditAnswer>>;
  /** With `product` (POST /reconciliation/products), a consent field lists those opted in for that product. */
  reconcile(field: ReconciliationField, product?: string): ReconciliationRun;
  /**
   * The records' `country` and `mobile_prefix` of the listed players it holds (absent: unknown), so a recipient is
   * read in its player's country (src/sms/recipient-reading.ts). Only the sql backend has it: the http one would ask
   * the platform for every player on the send path, so without it sms.default_region decides alone.
   */
  playerCountries?(userIds: readonly string[]): Promise<Map<string, PlayerCountry>>;
  close(): Promise<void>;
}
