/**
 * The JSON-lines format: one JSON object per line, blank lines skipped. Keys are matched without
 * regard to case (`startMs` is `startms`).
 */
import { formatValue } from 'limits-core/internal';
import type { Line } from './lines.js';
import type { RawEntry } from './RawEntry.js';

/**
 * The records of a JSON-lines file, one per non-blank line, as they are read.
 * @throws SyntaxError naming `file:line` for a line that is not JSON (saying so when it is a last line
 * without a line break: a truncated file); TypeError for a line that is JSON but not an object.
 */
export async function* jsonLinesEntries(
  lines: AsyncIterable<Line>,
  file: string,
): AsyncGenerator<RawEntry> {
  for await (const { text, line, terminated } of lines) {
    if (text.trim() === '') continue;
    const where = `${file}:${line}`;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const why = (error as Error).message;
      throw new SyntaxError(
        terminated
          ? `limits: ${where}: invalid JSON: ${why}`
          : `limits: ${where}: invalid JSON in the last line, which has no line break at its end (a truncated file?): ${why}`,
      );
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new TypeError(
        `limits: ${where}: a record must be a JSON object, got ${formatValue(value)}`,
      );
    }
    const fields: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) fields[key.toLowerCase()] = field;
    yield { fields, where };
  }
}
