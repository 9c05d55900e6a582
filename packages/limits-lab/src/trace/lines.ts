/**
 * Text lines read lazily from a stream of chunks: one line is decoded and handed on at a time, so a
 * file of any size is read in the memory of its longest line (refused beyond {@link MAX_LINE_CHARS}).
 */

/** One line of input, without its line break. */
export interface Line {
  /** The line's text (a trailing `\r` removed). */
  text: string;
  /** Its 1-based number in the file. */
  line: number;
  /** Whether a line break ended it (`false` for a last line cut short: a truncated file, maybe). */
  terminated: boolean;
}

/** The longest line accepted: a file without line breaks is refused, not read whole. */
export const MAX_LINE_CHARS = 1 << 20;

/**
 * The lines of `chunks` (UTF-8 bytes or text), in order, as they arrive: the next chunk is read only
 * when the lines of the previous ones have been taken. A UTF-8 byte-order mark at the start is
 * dropped; an empty file has no lines.
 * @param file - the file's name, for the error.
 * @throws SyntaxError naming `file:line` when a line exceeds {@link MAX_LINE_CHARS} characters.
 */
export async function* readLines(
  chunks: AsyncIterable<string | Uint8Array>,
  file: string,
): AsyncGenerator<Line> {
  const decoder = new TextDecoder('utf-8');
  let rest = '';
  let line = 0;
  let first = true;
  const cut = (text: string) => (text.endsWith('\r') ? text.slice(0, -1) : text);
  for await (const chunk of chunks) {
    rest += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (first && rest.length > 0) {
      if (rest.charCodeAt(0) === 0xfeff) rest = rest.slice(1);
      first = false;
    }
    let from = 0;
    for (let end = rest.indexOf('\n'); end !== -1; end = rest.indexOf('\n', from)) {
      line++;
      const text = cut(rest.slice(from, end));
      from = end + 1;
      if (text.length > MAX_LINE_CHARS) throw tooLong(file, line);
      yield { text, line, terminated: true };
    }
    rest = rest.slice(from);
    if (rest.length > MAX_LINE_CHARS) throw tooLong(file, line + 1);
  }
  rest += decoder.decode();
  if (rest.length > 0) yield { text: cut(rest), line: line + 1, terminated: false };
}

function tooLong(file: string, line: number): SyntaxError {
  return new SyntaxError(
    `limits: ${file}:${line}: a line longer than ${MAX_LINE_CHARS} characters (is this a JSON-lines or CSV file?)`,
  );
}
