/**
 * The request headers of a dispatch with the request context's headers added: undici takes headers
 * as an object, a flat `[name, value, …]` array or an iterable of `[name, value]` pairs, and each
 * form is kept. A header the caller set (in any case) is never replaced.
 */

/** `headers` (as given in the dispatch options) with each of `pairs` the caller did not set. */
export function withHeaders(headers: unknown, pairs: ReadonlyArray<[string, string]>): unknown {
  if (headers === undefined || headers === null) return Object.fromEntries(pairs);
  if (typeof headers !== 'object') return headers;
  if (Array.isArray(headers) && (headers.length === 0 || typeof headers[0] === 'string')) {
    // The flat form: names at even indexes.
    const out: unknown[] = headers.slice();
    const set = new Set<string>();
    for (let i = 0; i < headers.length; i += 2) set.add(String(headers[i]).toLowerCase());
    for (const [name, value] of pairs) if (!set.has(name)) out.push(name, value);
    return out;
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    const out = [...(headers as Iterable<[unknown, unknown]>)];
    const set = new Set(out.map((entry) => String(entry[0]).toLowerCase()));
    for (const pair of pairs) if (!set.has(pair[0])) out.push(pair);
    return out;
  }
  const out: Record<string, unknown> = { ...(headers as Record<string, unknown>) };
  const set = new Set(Object.keys(out).map((name) => name.toLowerCase()));
  for (const [name, value] of pairs) if (!set.has(name)) out[name] = value;
  return out;
}
