import type { IncomingMessage } from 'node:http';
import { formatValue } from 'limits-core/internal';

/**
 * Which requests `loadShed` lets through untouched (no quota charge, no permit, never refused):
 * a list of paths, or a predicate.
 *
 * - A path `'/health'` matches that path exactly (the query string is ignored: `/health?full=1`
 *   matches; `/health/` and `/healthz` do not).
 * - A path ending in `/*`, `'/internal/*'`, matches the prefix and everything under it:
 *   `/internal`, `/internal/`, `/internal/metrics`, but not `/internals`.
 * - A predicate `(req) => boolean` decides alone; only `true` exempts.
 *
 * The path is the request's as the server received it (Express: `originalUrl`, so a mount path
 * does not change it), compared as sent: no decoding, no normalisation.
 */
export type ExemptOption = readonly string[] | ((req: IncomingMessage) => boolean);

/** Most paths in an `exempt` list. */
const MAX_PATHS = 1000;
/** Longest path in an `exempt` list. */
const MAX_PATH_LENGTH = 1024;

/**
 * @internal Checks option `exempt` and makes its test.
 * @returns the test of a request (`true`: exempt), or `undefined` when nothing is exempt.
 * @throws TypeError when it is neither an array nor a function; RangeError for a list that is too
 *   long or a path that is not one.
 */
export function checkExempt(value: unknown): ((req: IncomingMessage) => boolean) | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') {
    const predicate = value as (req: IncomingMessage) => unknown;
    return (req) => predicate(req) === true;
  }
  if (!Array.isArray(value)) {
    throw new TypeError(
      `limits: option "exempt" must be an array of paths or a function (req) => boolean, got ${formatValue(value)}`,
    );
  }
  if (value.length > MAX_PATHS) {
    throw new RangeError(
      `limits: option "exempt" must list at most ${MAX_PATHS} paths, got ${value.length}`,
    );
  }
  const exact = new Set<string>();
  const prefixes: string[] = [];
  value.forEach((path: unknown, i) => {
    if (
      typeof path !== 'string' ||
      path.length > MAX_PATH_LENGTH ||
      !path.startsWith('/') ||
      /[?#\s]/.test(path) ||
      path.slice(0, path.endsWith('/*') ? -2 : undefined).includes('*')
    ) {
      throw new (typeof path === 'string' ? RangeError : TypeError)(
        `limits: option "exempt[${i}]" must be a path starting with "/" (up to ${MAX_PATH_LENGTH} characters, no "?", "#", spaces, and "*" only as a final "/*" prefix), got ${formatValue(path)}`,
      );
    }
    if (path.endsWith('/*')) prefixes.push(path.slice(0, -2));
    else exact.add(path);
  });
  if (exact.size === 0 && prefixes.length === 0) return undefined;
  return (req) => {
    const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (exact.has(path)) return true;
    for (const prefix of prefixes) {
      if (
        path.startsWith(prefix) &&
        (path.length === prefix.length || path.charCodeAt(prefix.length) === 47) /* / */
      ) {
        return true;
      }
    }
    return false;
  };
}
