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
import { frame, parseSvg, type SvgElement, xs, ys } from './support/svg.js';

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

  test('draws one row of three panels per series, each line of a series in its own path, marks shaded', () => {
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
    // limit, peak in flight, mean and max latency, ended and refused calls: 6 paths per series.
    expect(series.map((e) => e.attrs['data-line'])).toEqual(
      ['limit', 'inflight', 'latency', 'latencyMax', 'completed', 'refused']
        .flatMap((l) => [l])
        .concat(['limit', 'inflight', 'latency', 'latencyMax', 'completed', 'refused']),
    );
    // Each series shades its mark in each of its three panels.
    expect(elements.filter((e) => e.attrs.class === 'mark')).toHaveLength(6);
    const legend = elements.filter((e) => e.attrs.class === 'legend').length;
    expect(legend).toBe(1 + 3 + 6); // the mark, three circuit states, each panel's two lines
    for (const text of [
      '>shaded: spike 0.1–0.3 s<',
      '>band: circuit closed<',
      '>band: circuit open<',
      '>band: circuit half-open (trial calls)<',
      '>in flight (calls), each row its own scale<',
      '>latency (ms), one scale for all rows<',
      '>calls/s, one scale for all rows<',
      '>time since start (s)<',
      '>limit<',
      '>peak in flight<',
      '>S1 &quot;spike&quot;<',
    ]) {
      expect(svg).toContain(text);
    }
    // A circuit band only for the guard's row: one span open from 200 ms, closed before it.
    const bands = elements.filter((e) => e.attrs.class === 'state');
    expect(bands.map((e) => e.attrs['data-state'])).toEqual([
      'CLOSED',
      'OPEN',
      'CLOSED',
      'OPEN',
      'CLOSED',
      'OPEN',
    ]);
  });

  test('no gap in any line: the legend does not explain gaps; a gap: it does, with the bucket width', () => {
    expect(renderTimelineSvg([recorded('a', [5, 6, 7])])).not.toContain('gap in a line');
    const a = recorded('a', [5, 6, 7]);
    (a.timeline.points[1] as TimelinePoint).latencyMs = Number.NaN;
    expect(renderTimelineSvg([a])).toContain(
      '>gap in a line: nothing to draw for that 100 ms bucket (no call ended in it, or no limit known)<',
    );
  });

  test('each row shades its own marks; the legend names a label once, with each distinct span', () => {
    const a = recorded('a', [1, 2, 3]);
    const b = recorded('b', [1, 2, 3]);
    b.timeline.marks = [{ label: 'spike', fromMs: 102, toMs: 302 }]; // the same to the hundredth
    const svg = renderTimelineSvg([a, b]);
    const marks = parseSvg(svg).filter((e) => e.attrs.class === 'mark');
    expect(marks).toHaveLength(6);
    expect(marks.map((m) => m.attrs.x).slice(0, 3)).not.toEqual(
      marks.map((m) => m.attrs.x).slice(3),
    );
    expect(svg.match(/>shaded: spike [^<]*</g)).toEqual(['>shaded: spike 0.1–0.3 s<']);
    const c = recorded('c', [1, 2, 3]);
    c.timeline.marks = [{ label: 'spike', fromMs: 150, toMs: 350 }];
    expect(renderTimelineSvg([a, b, c]).match(/>shaded: spike [^<]*</g)).toEqual([
      '>shaded: spike 0.1–0.3 s, 0.15–0.35 s<',
    ]);
  });

  test('a span under a second is labelled to the hundredth of a second', () => {
    const a = recorded('a', [1, 2, 3]);
    a.timeline.marks = [{ label: 'blip', fromMs: 1250, toMs: 1730 }];
    expect(renderTimelineSvg([a])).toContain('>shaded: blip 1.25–1.73 s<');
  });

  test('the limit line goes through the recorded limits, on the row its own scale', () => {
    const svg = renderTimelineSvg(
      [recorded('static', [200, 200, 200, 200]), recorded('vegas', [10, 20, 10, 20])],
      { panelHeight: 100 },
    );
    const elements = parseSvg(svg);
    const limit = (name: string) =>
      elements.find((e) => e.attrs['data-series'] === name && e.attrs['data-line'] === 'limit')
        ?.attrs.d as string;
    // Each row's in-flight panel has its own range: 200 fills the static row, 20 the vegas row.
    const s = frame(elements, 'static', 0);
    expect(ys(limit('static'))).toEqual([s.y, s.y, s.y, s.y]);
    const v = frame(elements, 'vegas', 0);
    expect(ys(limit('vegas'))).toEqual([v.y + 50, v.y, v.y + 50, v.y]);
    // The y ticks of the vegas row are round: 0, 5, 10, 15, 20.
    const from = svg.indexOf('<g class="panel" data-panel="0" data-series="vegas">');
    const group = svg.slice(from, svg.indexOf('</g>', from));
    const ticks = [...group.matchAll(/text-anchor="end"[^>]*>([^<]*)</g)].map((m) => m[1]);
    expect(ticks).toEqual(['0', '5', '10', '15', '20']);
  });

  test('latency and calls/s share one range across rows', () => {
    const elements = parseSvg(
      renderTimelineSvg([recorded('a', [10, 10]), recorded('b', [10, 10])], { panelHeight: 100 }),
    );
    const top = (name: string, line: string) =>
      Math.min(
        ...ys(
          elements.find((e) => e.attrs['data-series'] === name && e.attrs['data-line'] === line)
            ?.attrs.d as string,
        ),
      ) - frame(elements, name, line === 'completed' ? 2 : 1).y;
    expect(top('a', 'latency')).toBeCloseTo(top('b', 'latency'), 5);
    expect(top('a', 'completed')).toBeCloseTo(top('b', 'completed'), 5);
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
  /** Every number in the SVG's attributes is finite, and every x within the chart's width. */
  function expectDrawable(svg: string, width = 1200): SvgElement[] {
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
  /** The path of one line of series "a" (`limit`, `latency`, `completed`, ...). */
  function line(elements: SvgElement[], key: string): string {
    return elements.find((e) => e.attrs.class === 'series' && e.attrs['data-line'] === key)?.attrs
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
    // Two buckets, 0 to 200 ms: their middles at a quarter and three quarters of the panel.
    const f = frame(elements, 'a', 0);
    expect(xs(line(elements, 'limit'))).toEqual([
      Math.round((f.x + f.width / 4) * 10) / 10,
      Math.round((f.x + (3 * f.width) / 4) * 10) / 10,
    ]);
    expect(svg).toContain('>0.2</text>');
    expect(svg).not.toContain('>0.3</text>');
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
    for (const key of ['limit', 'latency', 'completed']) {
      expect(line(elements, key).match(/[ML]/g)).toEqual(['M', 'L']);
    }
    // No circuit band is drawn for a point that has no place on the time axis.
    expect(elements.filter((e) => e.attrs.class === 'state')).toHaveLength(0);
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
    const svg = renderTimelineSvg(series(points), { panelHeight: 100 });
    const elements = expectDrawable(svg);
    // limit, in flight, latency, completed, refused: each with a gap at the middle point.
    for (const key of ['limit', 'inflight', 'latency', 'completed', 'refused']) {
      expect(line(elements, key).match(/[ML]/g), key).toEqual(['M', 'M']);
    }
    expect(line(elements, 'latencyMax').match(/[ML]/g)).toEqual(['M', 'L', 'L']);
    // Every y stays inside its panel: the limit, 10, at the top of a 0–10 range.
    const f = frame(elements, 'a', 0);
    expect(ys(line(elements, 'limit'))).toEqual([f.y, f.y]);
    expect(svg).toContain('gap in a line');
  });

  test('a point without shortCircuited (made by other means) draws its refusals from rejected alone', () => {
    const bare = (t: number) => {
      const p = point(t, { rejected: 3 });
      delete p.shortCircuited;
      return p;
    };
    const elements = expectDrawable(renderTimelineSvg(series([bare(0), bare(100)])));
    expect(line(elements, 'refused').match(/[ML]/g)).toEqual(['M', 'L']);
    const withShort = expectDrawable(
      renderTimelineSvg(series([point(0, { rejected: 3, shortCircuited: 3 }), bare(100)])),
    );
    // 6 then 3 refused per 100 ms: 60 then 30 calls/s, the first drawn higher.
    const [first, second] = ys(line(withShort, 'refused'));
    expect(first).toBeLessThan(second as number);
  });

  test('a value near the largest double, or a subnormal one, is scaled into the panel without NaN', () => {
    const huge = expectDrawable(
      renderTimelineSvg(
        series([point(0, { limit: 1.7e308 }), point(100, { limit: Number.MAX_VALUE })]),
        { panelHeight: 100 },
      ),
    );
    const f = frame(huge, 'a', 0);
    expect(ys(line(huge, 'limit')).every((y) => y >= f.y && y <= f.y + f.height)).toBe(true);
    const tiny = renderTimelineSvg(
      series([point(0, { latencyMs: 5e-324 }), point(100, { latencyMs: Number.MIN_VALUE })]),
    );
    expect(line(expectDrawable(tiny), 'latency')).toMatch(/^M[\d.]+,[\d.]+L[\d.]+,[\d.]+$/);
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
    const elements = expectDrawable(svg);
    const shaded = elements.filter((e) => e.attrs.class === 'mark');
    const f = frame(elements, 'a', 0);
    const spans = shaded.slice(0, 2).map((e) => [Number(e.attrs.x), Number(e.attrs.width)]);
    const expected = [
      [f.x, f.width / 2], // −500..100 ms: from the left edge to the middle
      [f.x + (3 * f.width) / 4, f.width / 4], // 150 ms..: to the right edge
    ];
    spans.forEach((span, i) => {
      expect(span[0]).toBeCloseTo(expected[i]?.[0] as number, 0);
      expect(span[1]).toBeCloseTo(expected[i]?.[1] as number, 0);
    });
    expect(shaded).toHaveLength(6); // each in the three panels
    expect(svg).not.toMatch(/>[^<]*(nan|open-ended|from-ever)[^<]*</);
    // A span reaching outside the recording is named with its real times.
    expect(svg).toContain('>shaded: early 0–0.1 s<');
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
