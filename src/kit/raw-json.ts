/**
 * A JSON value kept as the text it arrived as: a whole activity, or a number a double would change (an integer
 * beyond 2^53, `1e400`, `-1e-400`). `stringifyExact` (src/http/exact-json.ts) writes it unchanged; `String()` of it
 * is that text, so a number used as a key (an order key) keeps every digit.
 */
export class RawJson {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}
