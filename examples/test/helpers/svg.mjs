// A strict little SVG reader for the tests: every tag closed in order, attributes quoted. Elements come
// back in document order with their attributes and the text right after their opening tag.
import assert from 'node:assert/strict';

/** Elements of a well-formed SVG, in order: `{ name, attrs, text }`. */
export function parseSvg(svg) {
  const elements = [];
  const stack = [];
  const tag = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y;
  for (let i = svg.indexOf('<'); i !== -1; i = svg.indexOf('<', tag.lastIndex)) {
    tag.lastIndex = i;
    const m = tag.exec(svg);
    assert.ok(m, `malformed tag at ${i}: ${svg.slice(i, i + 40)}`);
    const [, close, name, attrs, self] = m;
    if (close) assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
    else {
      const next = svg.indexOf('<', tag.lastIndex);
      elements.push({
        name,
        attrs: Object.fromEntries(
          [...attrs.matchAll(/([\w:-]+)="([^"]*)"/g)].map((a) => [a[1], a[2]]),
        ),
        text: self ? '' : svg.slice(tag.lastIndex, next === -1 ? undefined : next),
      });
      if (!self) stack.push(name);
    }
  }
  assert.deepEqual(stack, [], 'unclosed elements');
  return elements;
}

/** The points of a path's `d` made of M/L commands only: `[{ x, y }]`. */
export function pathPoints(d) {
  assert.match(d, /^([ML]-?[\d.]+,-?[\d.]+)+$/, `unexpected path data: ${d.slice(0, 60)}`);
  return [...d.matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((m) => ({
    x: Number(m[1]),
    y: Number(m[2]),
  }));
}
