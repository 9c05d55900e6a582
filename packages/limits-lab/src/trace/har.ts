/**
 * The HAR format (HTTP Archive 1.2, as browsers and proxies export it): one JSON document whose
 * `log.entries[]` are the calls — `startedDateTime` (ISO 8601), `time` (total ms) and
 * `response.status` (0: no answer). A HAR file is parsed whole, so it is refused above
 * {@link MAX_HAR_BYTES}.
 */
import { formatValue } from 'limits-core/internal';
import type { RawEntry } from './RawEntry.js';

/** The largest HAR file read: 256 MiB (it is one JSON document, held whole while parsed). */
export const MAX_HAR_BYTES = 256 * 1024 * 1024;

const HAR_NAMES = { start: 'startedDateTime', duration: 'time', status: 'response.status' };

/**
 * Checks a HAR file's size before it is read.
 * @throws RangeError naming the file, its size and the limit.
 */
export function checkHarSize(file: string, bytes: number): void {
  if (bytes > MAX_HAR_BYTES) {
    const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
    throw new RangeError(
      `limits: ${file} is ${mib(bytes)}; a HAR file is read whole and must be at most ${mib(MAX_HAR_BYTES)} (convert it to JSON lines to stream it)`,
    );
  }
}

/**
 * The entries of a HAR document, in file order (the caller sorts them).
 * @throws SyntaxError naming `file:line` for invalid JSON; TypeError when `log.entries` is not an
 * array or an entry is not an object.
 */
export function harEntries(text: string, file: string): RawEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    const why = (error as Error).message;
    const at = positionOf(why, text);
    const line = at === undefined ? '' : `:${lineAt(text, at)}`;
    const truncated =
      /end of JSON input/.test(why) || at === text.trimEnd().length ? ' (a truncated file?)' : '';
    throw new SyntaxError(`limits: ${file}${line}: invalid JSON${truncated}: ${why}`);
  }
  const log = (doc as { log?: unknown } | null)?.log;
  const entries = (log as { entries?: unknown } | null | undefined)?.entries;
  if (!Array.isArray(entries)) {
    throw new TypeError(
      `limits: ${file}: field "log.entries" must be an array (is this a HAR file?), got ${entries === undefined ? 'nothing' : formatValue(entries)}`,
    );
  }
  return entries.map((entry: unknown, i) => {
    const where = `${file} log.entries[${i}]`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new TypeError(
        `limits: ${where}: an entry must be an object, got ${formatValue(entry)}`,
      );
    }
    const e = entry as { startedDateTime?: unknown; time?: unknown; response?: unknown };
    const response = e.response as { status?: unknown } | null | undefined;
    return {
      fields: {
        start: e.startedDateTime,
        duration: e.time,
        status: typeof response === 'object' && response !== null ? response.status : undefined,
      },
      where,
      names: HAR_NAMES,
    };
  });
}

/**
 * Where `JSON.parse` stopped, from its message: `at position N`, or the context it quotes around an
 * unexpected token (10 characters either side, cut with `...`). `undefined` when it does not say (a
 * short document, quoted whole, or the end of the input).
 * Its text reads `Unexpected token 'x', ..."context"... is not valid JSON`, the dots where it is cut.
 */
function positionOf(why: string, text: string): number | undefined {
  const at = /at position (\d+)/.exec(why);
  if (at !== null) return Number(at[1]);
  const quoted = /^Unexpected token .*?, (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(
    why,
  );
  if (quoted === null) return undefined;
  const [, lead, context, trail] = quoted as unknown as [
    string,
    string | undefined,
    string,
    string | undefined,
  ];
  if (lead === undefined && trail === undefined) return undefined;
  if (lead === undefined) return context.length - 10;
  const from = text.indexOf(context);
  return from === -1 ? undefined : from + 10;
}

function lineAt(text: string, position: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < position; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
