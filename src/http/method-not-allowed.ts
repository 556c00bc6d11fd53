/**
 * 405 for a known path called with another method (RFC 9110 §15.5.6: with an `Allow` header), instead of the 404
 * "no route" a client would take for a wrong URL. Built from the app's own route table, so it never drifts.
 */

/** A Hono path pattern as a regular expression: `:name` one segment, `:name{re}` that pattern, `*` anything. */
export function patternToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; ) {
    const rest = pattern.slice(i);
    const param = /^:[A-Za-z0-9_]+(\{((?:[^{}]|\{[^{}]*\})+)\})?\??/.exec(rest);
    if (param) {
      source += param[2] ? `(?:${param[2]})` : '[^/]+';
      i += param[0].length;
    } else if (rest[0] === '*') {
      source += '.*';
      i += 1;
    } else {
      source += rest[0]!.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
      i += 1;
    }
  }
  return new RegExp(`^${source}$`);
}

/** From the route table (method and path of each), a function giving the methods a path answers, for `Allow`. */
export function createAllowedMethods(routes: ReadonlyArray<{ method: string; path: string }>): (path: string) => string[] {
  // `ALL` entries are middleware (and catch-alls): they answer every method, so they never make a 405.
  const table = routes.filter((r) => r.method !== 'ALL').map((r) => ({ method: r.method.toUpperCase(), re: patternToRegExp(r.path) }));
  return (path) => {
    const methods = new Set(table.filter((r) => r.re.test(path)).map((r) => r.method));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };
}
