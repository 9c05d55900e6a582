import { EventEmitter } from 'eventemitter3';
import { FixedLimit, Limiter } from 'limits-core';
import { describe, expect, test } from 'vitest';
import {
  renderTimelineSvg,
  type TimelineMark,
  type TimelinePoint,
  TimelineRecorder,
} from '../src/index.js';
import { FakeClock } from './support/FakeClock.js';

/**
 * Checks that `svg` is well-formed XML as far as an SVG renderer cares (every tag closed in order,
 * attributes quoted, entities known) and returns the elements met, in order.
 */
function parseSvg(svg: string): Array<{ name: string; attrs: Record<string, string> }> {
  const elements: Array<{ name: string; attrs: Record<string, string> }> = [];
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

describe('TimelineRecorder', () => {
  test('records the limit, peak in-flight, outcomes, latency and refusals per bucket from events', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ algorithm: new FixedLimit(2), maxQueued: 0, clock });
    const recorder = new TimelineRecorder({ bucketMs: 100, clock }).track(limiter);
    const a = limiter.tryAcquire();
    const b = limiter.tryAcquire();
    expect(limiter.tryAcquire()).toBeUndefined(); // no refusal event: tryAcquire never refuses
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'at_limit' });
    await clock.advance(40);
    a?.success();
    await clock.advance(20);
    b?.dropped();
    await clock.advance(150); // bucket 1 stays empty, now in bucket 2
    const c = limiter.tryAcquire();
    c?.ignore();
    const t = recorder.timeline();
    expect(t.points.map((p) => p.t)).toEqual([0, 100, 200]);
    const [p0, p1, p2] = t.points;
    expect(p0).toMatchObject({ limit: 2, inflightMax: 2, success: 1, dropped: 1, rejected: 1 });
    expect(p0?.latencyMs).toBe(50); // mean of 40 and 60
    expect(p0?.latencyMaxMs).toBe(60);
    expect(p1).toMatchObject({ limit: 2, inflightMax: 0, success: 0, rejected: 0 });
    expect(p1?.latencyMs).toBeNaN();
    expect(p2).toMatchObject({ inflightMax: 1, ignore: 1 });
    expect(p0?.state).toBeUndefined();
  });

  test('records a guard: its limiter events plus circuit state and fallbacks', () => {
    const clock = { now: () => time };
    let time = 0;
    const limiter = new EventEmitter();
    const guard = Object.assign(new EventEmitter(), { limiter, state: 'CLOSED' as const });
    const recorder = new TimelineRecorder({ bucketMs: 10, clock }).track(guard);
    limiter.emit('limit', { limit: 8 });
    time = 15;
    guard.emit('state', { from: 'CLOSED', to: 'OPEN' });
    guard.emit('fallback', { reason: 'open' });
    guard.emit('fallback', { reason: 'open' });
    time = 25;
    guard.emit('state', { from: 'OPEN', to: 'HALF_OPEN' });
    const points = recorder.timeline().points;
    expect(points.map((p) => p.state)).toEqual(['CLOSED', 'OPEN', 'HALF_OPEN']);
    expect(points.map((p) => p.fallbacks)).toEqual([0, 2, 0]);
    expect(points.map((p) => p.limit)).toEqual([8, 8, 8]);
  });

  test('keeps at most maxPoints buckets, and a long silence costs no loop over skipped buckets', () => {
    let time = 0;
    const recorder = new TimelineRecorder({
      bucketMs: 1,
      maxPoints: 5,
      clock: { now: () => time },
    });
    for (time = 0; time < 8; time++) recorder.timeline();
    let t = recorder.timeline();
    expect(time).toBe(8);
    expect(t.points.map((p) => p.t)).toEqual([4, 5, 6, 7, 8]);
    expect(t.droppedPoints).toBe(4);
    time = 1e9; // a billion skipped buckets: must not loop over them
    t = recorder.timeline();
    expect(t.points.map((p) => p.t)).toEqual([1e9 - 4, 1e9 - 3, 1e9 - 2, 1e9 - 1, 1e9]);
    expect(t.droppedPoints).toBe(1e9 - 4);
  });

  test('stop() removes every listener it added', () => {
    const limiter = new Limiter({ limit: 3 });
    const before = limiter.eventNames().length;
    const recorder = new TimelineRecorder().track(limiter);
    expect(limiter.listenerCount('release')).toBe(1);
    recorder.stop();
    recorder.stop();
    expect(limiter.eventNames().length).toBe(before);
  });

  test('marks: explicit spans and begin/end, an open span reaching now', () => {
    let time = 0;
    const recorder = new TimelineRecorder({ clock: { now: () => time } });
    recorder.mark('warm-up', 0, 50);
    time = 100;
    recorder.begin('spike');
    time = 300;
    expect(recorder.timeline().marks).toEqual([
      { label: 'warm-up', fromMs: 0, toMs: 50 },
      { label: 'spike', fromMs: 100, toMs: 300 },
    ]);
    time = 400;
    recorder.end('spike');
    recorder.end('never begun');
    time = 500;
    expect(recorder.timeline().marks[1]).toEqual({ label: 'spike', fromMs: 100, toMs: 400 });
  });

  test('bad options and arguments are refused naming them', () => {
    expect(() => new TimelineRecorder({ bucketMs: 0 })).toThrow(
      /"bucketMs" must be a number in \[1, 3600000\], got 0/,
    );
    expect(() => new TimelineRecorder({ maxPoints: 1.5 })).toThrow(
      /"maxPoints" must be an integer/,
    );
    expect(() => new TimelineRecorder({ buckets: 3 } as never)).toThrow(/buckets/);
    expect(() => new TimelineRecorder({ clock: {} as never })).toThrow(
      /"clock" must be an object with a now\(\) function/,
    );
    expect(() => new TimelineRecorder().track(null as never)).toThrow(/"source" of track\(\)/);
    expect(() => new TimelineRecorder().mark('x', 5, 1)).toThrow(/"toMs" must be a number in \[5/);
    expect(() => new TimelineRecorder().mark(3 as never, 0, 1)).toThrow(/"label" must be a string/);
  });
});

describe('renderTimelineSvg', () => {
  function recorded(name: string, limits: number[], state = false) {
    let time = 0;
    const limiter = new EventEmitter();
    const source = state
      ? Object.assign(new EventEmitter(), { limiter, state: 'CLOSED' })
      : limiter;
    const recorder = new TimelineRecorder({ bucketMs: 100, clock: { now: () => time } }).track(
      source as never,
    );
    limits.forEach((limit, i) => {
      time = i * 100;
      limiter.emit('limit', { limit });
      limiter.emit('acquire', { inflight: limit - 1, capacity: limit });
      limiter.emit('release', { outcome: 'success', rtt: 10 + i, inflight: limit - 2 });
      if (state && i === 2) source.emit('state', { from: 'CLOSED', to: 'OPEN' });
    });
    recorder.mark('spike', 100, 300);
    return { name, timeline: recorder.timeline() };
  }

  test('draws a well-formed SVG with one line group per series in every panel, marks shaded', () => {
    const svg = renderTimelineSvg(
      [recorded('static <50>', [50, 50, 50, 50]), recorded('vegas & co', [20, 12, 8, 15], true)],
      { title: 'S1 "spike"' },
    );
    const elements = parseSvg(svg);
    expect(elements[0]?.name).toBe('svg');
    const series = elements.filter((e) => e.attrs.class === 'series');
    expect(new Set(series.map((e) => e.attrs['data-series']))).toEqual(
      new Set(['static &lt;50&gt;', 'vegas &amp; co']),
    );
    // limit + in-flight, latency, completed + refused: 5 paths per series.
    expect(series.length).toBe(10);
    expect(elements.filter((e) => e.attrs.class === 'mark')).toHaveLength(1);
    expect(elements.filter((e) => e.attrs.class === 'legend')).toHaveLength(2);
    expect(svg).toContain('circuit state');
    expect(svg).toContain('S1 &quot;spike&quot;');
  });

  test('the same mark recorded apart by two series is shaded twice and labelled once', () => {
    const a = recorded('a', [1, 2, 3]);
    const b = recorded('b', [1, 2, 3]);
    b.timeline.marks = [{ label: 'spike', fromMs: 110, toMs: 310 }];
    const svg = renderTimelineSvg([a, b]);
    expect(parseSvg(svg).filter((e) => e.attrs.class === 'mark')).toHaveLength(2);
    expect(svg.match(/>spike<\/text>/g)).toHaveLength(1);
  });

  test('the limit line goes through the recorded limits, scaled into the panel', () => {
    const svg = renderTimelineSvg([recorded('a', [10, 20, 10, 20])], { panelHeight: 100 });
    const limitPath = parseSvg(svg).find((e) => e.attrs.class === 'series')?.attrs.d ?? '';
    const ys = [...limitPath.matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) => Number(m[1]));
    // Panel from y=12 to 112, max 20: limit 20 at the top, 10 half way.
    expect(ys).toEqual([62, 12, 62, 12]);
  });

  test('bad arguments are refused naming them', () => {
    expect(() => renderTimelineSvg([])).toThrow(/"series" of renderTimelineSvg\(\)/);
    expect(() => renderTimelineSvg([{ name: 'x' } as never])).toThrow(/"series\[0\]"/);
    expect(() => renderTimelineSvg([recorded('a', [1])], { width: 10 })).toThrow(/"width"/);
    expect(() => renderTimelineSvg([recorded('a', [1])], { heigth: 1 } as never)).toThrow(/heigth/);
  });
});

describe('renderTimelineSvg with numbers it cannot draw', () => {
  function point(t: number, values: Partial<TimelinePoint> = {}): TimelinePoint {
    return {
      t,
      limit: 10,
      inflightMax: 4,
      success: 2,
      dropped: 0,
      failure: 0,
      ignore: 0,
      latencyMs: 20,
      latencyMaxMs: 30,
      rejected: 0,
      shortCircuited: 0,
      fallbacks: 0,
      state: undefined,
      ...values,
    };
  }
  function series(points: TimelinePoint[], marks: TimelineMark[] = [], bucketMs = 100) {
    return [{ name: 'a', timeline: { bucketMs, points, marks, droppedPoints: 0 } }];
  }
  /** Every number in the SVG's attributes is finite, and every x within the plot's width. */
  function expectDrawable(svg: string, width = 960): ReturnType<typeof parseSvg> {
    expect(svg).not.toMatch(/NaN|Infinity/);
    const elements = parseSvg(svg);
    for (const e of elements) {
      for (const name of ['x', 'x1', 'x2', 'width']) {
        const v = e.attrs[name];
        if (v === undefined) continue;
        expect(Number(v), `${e.name} ${name}="${v}"`).toBeGreaterThanOrEqual(0);
        expect(Number(v), `${e.name} ${name}="${v}"`).toBeLessThanOrEqual(width);
      }
    }
    return elements;
  }
  /** The coordinates of the first line of a panel (0: limit, 1: latency, 2: rate). */
  function line(elements: ReturnType<typeof parseSvg>, panel: number): string {
    return elements.filter((e) => e.attrs.class === 'series')[[0, 2, 3][panel] as number]?.attrs
      .d as string;
  }

  test('a timeline whose bucketMs is not a number in [1, 3,600,000] is refused, naming it', () => {
    const points = [point(0), point(100)];
    expect(() => renderTimelineSvg(series(points, [], Number.NaN))).toThrow(
      new TypeError(
        'limits: argument "series[0].timeline.bucketMs" of renderTimelineSvg() must be a number in [1, 3600000], got NaN',
      ),
    );
    for (const bucketMs of [0, -100, 0.5, 3_600_001, 1e308, -Infinity]) {
      expect(() => renderTimelineSvg(series(points, [], bucketMs))).toThrow(
        new RangeError(
          `limits: argument "series[0].timeline.bucketMs" of renderTimelineSvg() must be a number in [1, 3600000], got ${bucketMs}`,
        ),
      );
    }
    const timeline = { points, marks: [], droppedPoints: 0 };
    expect(() => renderTimelineSvg([{ name: 'a', timeline } as never])).toThrow(
      /"series\[0\]\.timeline\.bucketMs" .* got undefined/,
    );
  });

  test('a timeline whose bucketMs is Infinity is refused instead of drawing time ticks forever', () => {
    expect(() => renderTimelineSvg(series([point(0), point(100)], [], Infinity))).toThrow(
      /"series\[0\]\.timeline\.bucketMs" .* must be a number in \[1, 3600000\], got Infinity/,
    );
  });

  test('a timeline without a marks array is refused, naming the series', () => {
    const timeline = { bucketMs: 100, points: [point(0)], droppedPoints: 0 };
    expect(() => renderTimelineSvg([{ name: 'a', timeline } as never])).toThrow(
      /argument "series\[0\]" of renderTimelineSvg\(\) must be \{ name: string, timeline: Timeline \}/,
    );
  });

  test('a point at t = Infinity is skipped: the time axis ends with the last point that can be drawn', () => {
    const svg = renderTimelineSvg(series([point(0), point(100), point(Infinity)]));
    const elements = expectDrawable(svg);
    // Two buckets, 0 to 200 ms: their middles at a quarter and three quarters of the plot.
    expect(line(elements, 0)).toBe('M278,12L722,12');
    expect(svg).toContain('>0.2s</text>');
  });

  test('points whose t is NaN, −Infinity or negative are skipped, wherever they are in the list', () => {
    const points = [
      point(Number.NaN),
      point(0),
      point(-100),
      point(100),
      point(-Infinity),
      point(Number.NaN, { state: 'OPEN' }),
    ];
    const elements = expectDrawable(renderTimelineSvg(series(points)));
    for (const panel of [0, 1, 2]) {
      expect(line(elements, panel).match(/[ML]/g)).toEqual(['M', 'L']);
    }
    // No circuit band is drawn for a point that has no place on the time axis.
    expect(elements.filter((e) => e.attrs.fill === '#f4a3a3')).toHaveLength(0);
  });

  test('a value that is not a finite number ≥ 0 leaves a gap in its line', () => {
    const points = [
      point(0),
      point(100, {
        limit: -5,
        inflightMax: Infinity,
        latencyMs: Number.NaN,
        success: Number.NaN,
        rejected: -1,
      }),
      point(200),
    ];
    const elements = expectDrawable(renderTimelineSvg(series(points), { panelHeight: 100 }));
    const paths = elements.filter((e) => e.attrs.class === 'series').map((e) => e.attrs.d);
    // limit, in flight, latency, completed, refused: each with a gap at the middle point.
    expect(paths).toHaveLength(5);
    for (const d of paths) expect(d?.match(/[ML]/g)).toEqual(['M', 'M']);
    // Every y stays inside its panel (the limit panel runs from y=12 to y=112).
    const ys = [...(paths[0] as string).matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) => Number(m[1]));
    expect(ys).toEqual([12, 12]);
  });

  test('a value near the largest double, or a subnormal one, is scaled into the panel without NaN', () => {
    const huge = renderTimelineSvg(
      series([point(0, { limit: 1.7e308 }), point(100, { limit: Number.MAX_VALUE })]),
      { panelHeight: 100 },
    );
    const ys = [...line(expectDrawable(huge), 0).matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) =>
      Number(m[1]),
    );
    expect(ys.every((y) => y >= 12 && y <= 112)).toBe(true);
    const tiny = renderTimelineSvg(
      series([point(0, { latencyMs: 5e-324 }), point(100, { latencyMs: Number.MIN_VALUE })]),
    );
    expect(line(expectDrawable(tiny), 1)).toMatch(/^M[\d.]+,[\d.]+L[\d.]+,[\d.]+$/);
  });

  test('a point far in the future stretches the time axis but draws every number finite', () => {
    expectDrawable(renderTimelineSvg(series([point(0), point(1e300), point(Number.MAX_VALUE)])));
  });

  test('a mark at NaN or ±Infinity is skipped; one before 0 or past the end is clipped to the chart', () => {
    const marks = [
      { label: 'nan', fromMs: Number.NaN, toMs: 50 },
      { label: 'open-ended', fromMs: 0, toMs: Infinity },
      { label: 'from-ever', fromMs: -Infinity, toMs: 50 },
      { label: 'early', fromMs: -500, toMs: 100 },
      { label: 'late', fromMs: 150, toMs: 1e9 },
    ];
    const svg = renderTimelineSvg(series([point(0), point(100)], marks));
    const shaded = expectDrawable(svg).filter((e) => e.attrs.class === 'mark');
    expect(shaded.map((e) => [e.attrs.x, e.attrs.width])).toEqual([
      ['56', '444'], // −500..100 ms: from the left edge to the middle
      ['722', '222'], // 150 ms..: to the right edge
    ]);
    expect(svg).not.toMatch(/>(nan|open-ended|from-ever)</);
  });

  test('width and panelHeight refuse NaN, ±Infinity, negative and huge values, naming the range', () => {
    const s = series([point(0)]);
    expect(() => renderTimelineSvg(s, { width: Number.NaN })).toThrow(
      new TypeError('limits: option "width" must be a number in [320, 10000], got NaN'),
    );
    for (const width of [Infinity, -Infinity, -960, 1e9]) {
      expect(() => renderTimelineSvg(s, { width })).toThrow(
        new RangeError(`limits: option "width" must be a number in [320, 10000], got ${width}`),
      );
    }
    for (const panelHeight of [Number.NaN, Infinity, -150, 1e9]) {
      expect(() => renderTimelineSvg(s, { panelHeight })).toThrow(
        /option "panelHeight" must be a number in \[60, 2000\]/,
      );
    }
  });
});

describe('TimelineRecorder with a clock or numbers it cannot use', () => {
  test('a clock whose first reading is not a finite number is refused, naming the option', () => {
    for (const reading of [Infinity, -Infinity]) {
      expect(() => new TimelineRecorder({ clock: { now: () => reading } })).toThrow(
        new RangeError(
          `limits: option "clock" must have a now() that returns a finite number (ms), got ${reading}`,
        ),
      );
    }
    for (const [reading, shown] of [
      [Number.NaN, 'NaN'],
      [undefined, 'undefined'],
      ['5', '"5"'],
    ] as const) {
      expect(() => new TimelineRecorder({ clock: { now: () => reading as never } })).toThrow(
        new TypeError(
          `limits: option "clock" must have a now() that returns a finite number (ms), got ${shown}`,
        ),
      );
    }
  });

  test('a clock that later reads Infinity is ignored: time stays at the last usable reading', () => {
    let time = 0;
    const limiter = new EventEmitter();
    const recorder = new TimelineRecorder({ bucketMs: 10, clock: { now: () => time } }).track(
      limiter,
    );
    time = 25;
    limiter.emit('limit', { limit: 3 });
    time = Infinity;
    limiter.emit('limit', { limit: 4 });
    expect(recorder.now()).toBe(25);
    const t = recorder.timeline();
    expect(t.points.map((p) => [p.t, p.limit])).toEqual([
      [0, Number.NaN],
      [10, Number.NaN],
      [20, 4],
    ]);
    expect(t.droppedPoints).toBe(0);
  });

  test('readings of NaN, −Infinity or beyond Number.MAX_SAFE_INTEGER ms from the start are ignored too', () => {
    let time = 0;
    const recorder = new TimelineRecorder({
      bucketMs: 1,
      maxPoints: 5,
      clock: { now: () => time },
    });
    time = 3;
    expect(recorder.now()).toBe(3);
    for (const reading of [
      Number.NaN,
      -Infinity,
      1e300,
      -1e300,
      Number.MAX_SAFE_INTEGER + 2,
      -Number.MAX_SAFE_INTEGER - 2,
    ]) {
      time = reading;
      expect(recorder.now()).toBe(3);
      expect(recorder.timeline().points.map((p) => p.t)).toEqual([0, 1, 2, 3]);
    }
    // Up to Number.MAX_SAFE_INTEGER ms is still time (bucket numbers stay exact integers).
    time = Number.MAX_SAFE_INTEGER;
    const t = recorder.timeline();
    expect(t.points.map((p) => p.t)).toEqual([
      Number.MAX_SAFE_INTEGER - 4,
      Number.MAX_SAFE_INTEGER - 3,
      Number.MAX_SAFE_INTEGER - 2,
      Number.MAX_SAFE_INTEGER - 1,
      Number.MAX_SAFE_INTEGER,
    ]);
    expect(t.droppedPoints).toBe(Number.MAX_SAFE_INTEGER - 4);
  });

  test('an open span ends at the last usable reading, never at NaN', () => {
    let time = 0;
    const recorder = new TimelineRecorder({ clock: { now: () => time } });
    time = 100;
    recorder.begin('spike');
    time = 300;
    recorder.now();
    time = Number.NaN;
    recorder.end('spike');
    recorder.mark('after', 250);
    expect(recorder.timeline().marks).toEqual([
      { label: 'spike', fromMs: 100, toMs: 300 },
      { label: 'after', fromMs: 250, toMs: 300 },
    ]);
  });

  test('mark() refuses a fromMs or toMs that is NaN, ±Infinity, negative or before fromMs', () => {
    const recorder = new TimelineRecorder({ clock: { now: () => 0 } });
    expect(() => recorder.mark('x', Number.NaN, 1)).toThrow(TypeError);
    expect(() => recorder.mark('x', Number.NaN, 1)).toThrow(/option "fromMs" must be a number/);
    expect(() => recorder.mark('x', Infinity, Infinity)).toThrow(
      new RangeError('limits: option "fromMs" must be a number in [0, Infinity), got Infinity'),
    );
    expect(() => recorder.mark('x', -1, 1)).toThrow(
      /"fromMs" must be a number in \[0, Infinity\), got -1/,
    );
    expect(() => recorder.mark('x', 0, Infinity)).toThrow(
      /"toMs" must be a number in \[0, Infinity\), got Infinity/,
    );
    expect(() => recorder.mark('x', 0, Number.NaN)).toThrow(/"toMs" must be a number/);
    expect(() => recorder.mark('x', 5, 1)).toThrow(
      /"toMs" must be a number in \[5, Infinity\), got 1/,
    );
    expect(recorder.timeline().marks).toEqual([]);
  });
});
