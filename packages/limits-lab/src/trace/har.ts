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
    const at = /position (\d+)/.exec(why);
    const line = at === null ? '' : `:${lineAt(text, Number(at[1]))}`;
    throw new SyntaxError(`limits: ${file}${line}: invalid JSON (a truncated file?): ${why}`);
  }
  const log = (doc as { log?: unknown } | null)?.log;
  const entries = (log as { entries?: unknown } | null | undefined)?.entries;
  if (!Array.isArray(entries)) {
    throw new TypeError(
      `limits: ${file}: field "log.entries" must be an array (is this a HAR file?), got ${formatValue(entries)}`,
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

function lineAt(text: string, position: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < position; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
