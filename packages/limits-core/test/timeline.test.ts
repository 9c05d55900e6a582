import { EventEmitter } from 'eventemitter3';
import { describe, expect, test } from 'vitest';
import { FixedLimit, Limiter, renderTimelineSvg, TimelineRecorder } from '../src/index.js';
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
    const limiter = new Limiter({ limit: new FixedLimit(2), maxQueued: 0, clock });
    const recorder = new TimelineRecorder({ bucketMs: 100, clock }).track(limiter);
    const a = limiter.tryAcquire();
    const b = limiter.tryAcquire();
    expect(limiter.tryAcquire()).toBeUndefined(); // no refusal event: tryAcquire never refuses
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'limit' });
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
