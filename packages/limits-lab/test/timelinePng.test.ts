import { Resvg } from '@resvg/resvg-js';
import { guard } from 'limits-breaker';
import { FixedLimit, LimitExceededError, Limiter, VegasLimit } from 'limits-core';
import { expect, test } from 'vitest';
import { renderTimelineSvg, TimelineRecorder, type TimelineSeries } from '../src/index.js';
import { FakeClock } from './support/FakeClock.js';
import { countColour, decodePng } from './support/png.js';
import { parseSvg } from './support/svg.js';

/** The chart's colours of the first three series, and one it must not use with three. */
const SERIES_COLOURS = ['#1f77b4', '#d62728', '#2ca02c'];
const UNUSED_COLOUR = '#9467bd';

/**
 * Three configurations under the same load on one fake clock: 2 calls every 10 ms to a downstream
 * answering in 50 ms, or 400 ms from 1 s to 2 s; the guard's circuit is opened by hand at 1.5 s and
 * closed at 2.5 s.
 */
async function recordThree(): Promise<TimelineSeries[]> {
  const clock = new FakeClock();
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const latency = () => (clock.now() >= 1000 && clock.now() < 2000 ? 400 : 50);
  const fixed = new Limiter({ algorithm: new FixedLimit(50), clock });
  const vegas = new Limiter({ algorithm: new VegasLimit(), clock });
  const breaker = guard(() => sleep(latency()), {
    limiter: { algorithm: new VegasLimit(), clock },
    timeoutMs: false,
    resetTimeout: 100_000,
    fallback: () => undefined,
    clock,
  });
  const recorders = [fixed, vegas, breaker].map((source) =>
    new TimelineRecorder({ bucketMs: 100, clock }).track(source),
  );
  const calls: Promise<unknown>[] = [];
  const refusedOk = (e: unknown) => {
    if (!(e instanceof LimitExceededError)) throw e;
  };
  for (let t = 0; t < 3000; t += 10) {
    if (t === 1500) breaker.breaker.open();
    if (t === 2500) breaker.breaker.close();
    for (let i = 0; i < 2; i++) {
      calls.push(fixed.run(() => sleep(latency())).catch(refusedOk));
      calls.push(vegas.run(() => sleep(latency())).catch(refusedOk));
      calls.push(breaker.fire());
    }
    await clock.advance(10);
  }
  await clock.advance(1000);
  await Promise.all(calls);
  await breaker.shutdown();
  return ['static 50', 'vegas', 'vegas+breaker'].map((name, i) => {
    const recorder = recorders[i] as TimelineRecorder;
    recorder.mark('spike', 1000, 2000);
    recorder.stop();
    return { name, timeline: recorder.timeline() };
  });
}

test('a chart of three configurations renders to a PNG with each series colour, the legend and the axis titles', async () => {
  const series = await recordThree();
  const svg = renderTimelineSvg(series, { title: 'three configurations', width: 900 });

  // The SVG: one set of paths per configuration, the legend entries and the axis titles.
  const elements = parseSvg(svg);
  const paths = elements.filter((e) => e.attrs.class === 'series');
  for (const s of series) {
    const own = paths.filter((e) => e.attrs['data-series'] === s.name);
    expect(own.map((e) => e.attrs['data-line']).sort()).toEqual(
      ['completed', 'inflight', 'latency', 'latencyMax', 'limit', 'refused'].sort(),
    );
  }
  const texts = [...svg.matchAll(/>([^<>]+)<\/text>/g)].map((m) => m[1]);
  expect(texts).toEqual(
    expect.arrayContaining([
      'static 50',
      'vegas',
      'vegas+breaker',
      'shaded: spike 1–2 s',
      'band: circuit closed',
      'band: circuit open',
      'band: circuit half-open (trial calls)',
      'in flight (calls), each row its own scale',
      'latency (ms), one scale for all rows',
      'calls/s, one scale for all rows',
      'time since start (s)',
      'limit',
      'peak in flight',
      'mean',
      'max',
      'ended on the downstream',
      'refused before reaching it',
    ]),
  );

  // The PNG: it decodes, at the SVG's size, to the pixels resvg rendered.
  const height = Number(elements[0]?.attrs.height);
  const rendered = new Resvg(svg, { font: { loadSystemFonts: false } }).render();
  const png = decodePng(rendered.asPng());
  expect([png.width, png.height]).toEqual([900, height]);
  expect(Buffer.from(png.rgba).equals(Buffer.from(rendered.pixels))).toBe(true);

  // Each configuration's colour is drawn (its lines), and a colour no series has is not.
  for (const colour of SERIES_COLOURS) {
    expect(countColour(png, colour), colour).toBeGreaterThan(200);
  }
  expect(countColour(png, UNUSED_COLOUR)).toBe(0);
  // The circuit band shows both states the guard was in.
  expect(countColour(png, '#9fd89a')).toBeGreaterThan(100); // closed
  expect(countColour(png, '#f06c6c')).toBeGreaterThan(100); // open
});
