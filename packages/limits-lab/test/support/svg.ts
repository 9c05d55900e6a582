/** One element of an SVG document: its name and attributes, in document order. */
export interface SvgElement {
  name: string;
  attrs: Record<string, string>;
}

/**
 * Checks that `svg` is well-formed XML as far as an SVG renderer cares (every tag closed in order,
 * attributes quoted, entities known) and returns the elements met, in order.
 */
export function parseSvg(svg: string): SvgElement[] {
  const elements: SvgElement[] = [];
  const stack: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y;
  let i = 0;
  while (i < svg.length) {
    const lt = svg.indexOf('<', i);
    const text = svg.slice(i, lt === -1 ? svg.length : lt);
    if (/&(?!(amp|lt|gt|quot|#39);)/.test(text)) throw new Error(`bad entity in ${text}`);
    if (lt === -1) break;
    tag.lastIndex = lt;
    const m = tag.exec(svg);
    if (m === null) throw new Error(`malformed tag at ${lt}: ${svg.slice(lt, lt + 40)}`);
    const [, close, name, rawAttrs, selfClose] = m as unknown as string[];
    if (close === '/') {
      if (stack.pop() !== name) throw new Error(`</${name}> closes the wrong element`);
    } else {
      const attrs: Record<string, string> = {};
      for (const a of (rawAttrs as string).matchAll(/([\w:-]+)="([^"]*)"/g)) {
        attrs[a[1] as string] = a[2] as string;
      }
      elements.push({ name: name as string, attrs });
      if (selfClose !== '/') stack.push(name as string);
    }
    i = tag.lastIndex;
  }
  if (stack.length > 0) throw new Error(`unclosed: ${stack.join(', ')}`);
  return elements;
}

/** The frame (`x`, `y`, `width`, `height`) of a series' panel (0: in flight, 1: latency, 2: calls/s). */
export function frame(
  elements: readonly SvgElement[],
  series: string,
  panel: number,
): { x: number; y: number; width: number; height: number } {
  const i = elements.findIndex(
    (e) =>
      e.name === 'g' &&
      e.attrs['data-series'] === series &&
      e.attrs['data-panel'] === String(panel),
  );
  const rect = elements[i + 1];
  if (i === -1 || rect?.name !== 'rect') throw new Error(`no panel ${panel} for ${series}`);
  const [x, y, width, height] = ['x', 'y', 'width', 'height'].map((k) => Number(rect.attrs[k]));
  return { x: x as number, y: y as number, width: width as number, height: height as number };
}

/** The y coordinates of a path's points. */
export function ys(d: string): number[] {
  return [...d.matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) => Number(m[1]));
}

/** The x coordinates of a path's points. */
export function xs(d: string): number[] {
  return [...d.matchAll(/[ML]([\d.]+),[\d.]+/g)].map((m) => Number(m[1]));
}
