import { checkKeys, checkNumber, checkString, formatValue } from 'limits-core/internal';
import {
  MAX_BUCKET_MS,
  MIN_BUCKET_MS,
  type Timeline,
  type TimelineMark,
  type TimelinePoint,
  type TimelineState,
} from './TimelineRecorder.js';

/** One line group of a chart: a name (legend) and what a {@link TimelineRecorder} collected. */
export interface TimelineSeries {
  name: string;
  timeline: Timeline;
}

/** Options of {@link renderTimelineSvg}. */
export interface TimelineSvgOptions {
  /** Heading drawn above the chart. Default: none. */
  title?: string;
  /** Width in px (three panels side by side). Default 1200; range [320, 10,000]. */
  width?: number;
  /** Height of each panel in px (one row of three panels per series). Default 110; range [60, 2,000]. */
  panelHeight?: number;
}

const KEYS = ['title', 'width', 'panelHeight'] as const;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2'];
const STATE_COLORS: Record<TimelineState, string> = {
  CLOSED: '#9fd89a',
  HALF_OPEN: '#ffc94d',
  OPEN: '#f06c6c',
};
const STATE_NAMES: Record<TimelineState, string> = {
  CLOSED: 'circuit closed',
  OPEN: 'circuit open',
  HALF_OPEN: 'circuit half-open (trial calls)',
};
const MARK_FILL = '#b0b0b0';
const MARK_OPACITY = 0.3;
/** Outer margin, room for a panel's y tick labels, and the gap between two panels, in px. */
const MARGIN = 12;
const AXIS = 46;
const COL_GAP = 14;
const BAND = 8;

/** A line a panel draws for each series: what it plots, its dash pattern, its name in the key. */
interface LineDef {
  key: string;
  label: string;
  dash: string;
  value: (p: TimelinePoint) => number;
}

/** One of the three panels of a row: its heading (the y axis's title), its lines, its y scale. */
interface PanelDef {
  heading: string;
  lines: LineDef[];
  /** Per second (the counts divided by the bucket width) rather than per bucket. */
  rate: boolean;
  /** Each row its own y range (else one range for every row). */
  ownScale: boolean;
}

const PANELS: readonly PanelDef[] = [
  {
    heading: 'in flight (calls), each row its own scale',
    rate: false,
    ownScale: true,
    lines: [
      { key: 'limit', label: 'limit', dash: '', value: (p) => p.limit },
      { key: 'inflight', label: 'peak in flight', dash: '5,3', value: (p) => p.inflightMax },
    ],
  },
  {
    heading: 'latency (ms), one scale for all rows',
    rate: false,
    ownScale: false,
    lines: [
      { key: 'latency', label: 'mean', dash: '', value: (p) => p.latencyMs },
      { key: 'latencyMax', label: 'max', dash: '1,3', value: (p) => p.latencyMaxMs },
    ],
  },
  {
    heading: 'calls/s, one scale for all rows',
    rate: true,
    ownScale: false,
    lines: [
      {
        key: 'completed',
        label: 'ended on the downstream',
        dash: '',
        value: (p) => p.success + p.dropped + p.failure + p.ignore,
      },
      {
        key: 'refused',
        label: 'refused before reaching it',
        dash: '2,2',
        value: (p) => p.rejected + (p.shortCircuited ?? 0),
      },
    ],
  },
];

/**
 * Draws timelines as a self-contained SVG document (no scripts, no external resources), one row per
 * series, each row three panels on a shared time axis ("time since start (s)", from each recorder's
 * start):
 *
 * - **in flight (calls)**: the limit (solid) and the peak in-flight count (dashed), on the row's own
 *   y range, so an adaptive limit around 10 reads as clearly as a static 200 in another row;
 * - **latency (ms)**: the mean (solid) and max (dotted) RTT of the calls that ended in each bucket,
 *   on one range for every row;
 * - **calls/s**: calls that ended on the downstream (solid) and calls refused before reaching it
 *   (dotted: the limiter's refusals plus a guard's short circuits, each call once), on one range
 *   for every row.
 *
 * A guard's row has a band under its panels coloured by the circuit state (closed, open, half-open).
 * Marks (e.g. a latency spike) are shaded across the row's panels and named in the legend with their
 * span ("latency spike 2.5–7.5 s"). The legend also keys the circuit colours and says what a gap in
 * a line means (a bucket with no value: no call ended in it, or no limit known yet).
 *
 * Numbers that cannot be drawn are left out, never drawn as `NaN` or off the chart: a point whose `t`
 * is not a finite number ≥ 0 is skipped; a value (limit, in-flight, latency, a count) that is not a
 * finite number ≥ 0 leaves a gap in its line; a mark whose `fromMs` or `toMs` is not a finite number
 * is skipped, and one reaching before 0 or past the last point is clipped to the chart.
 *
 * @param series - the rows, in order: a name and what a {@link TimelineRecorder} collected.
 * @param options - title, width, panel height.
 * @returns the SVG document as a string.
 * @throws TypeError/RangeError for a bad argument or option, naming it: a series without a `name`,
 *   `points` or `marks` array, a timeline whose `bucketMs` is not a number in [1, 3,600,000] (the
 *   range a {@link TimelineRecorder} takes), `width` or `panelHeight` out of range.
 * @example
 * ```ts
 * const svg = renderTimelineSvg(
 *   [
 *     { name: 'static 50', timeline: staticRecorder.timeline() },
 *     { name: 'vegas', timeline: vegasRecorder.timeline() },
 *   ],
 *   { title: 'downstream latency 50 ms → 3 s' },
 * );
 * ```
 */
export function renderTimelineSvg(
  series: readonly TimelineSeries[],
  options: TimelineSvgOptions = {},
): string {
  if (!Array.isArray(series as unknown) || series.length === 0) {
    throw new TypeError(
      `limits: argument "series" of renderTimelineSvg() must be a non-empty array of { name, timeline }, got ${formatValue(series)}`,
    );
  }
  series.forEach((s, i) => {
    if (
      typeof s?.name !== 'string' ||
      !Array.isArray(s?.timeline?.points) ||
      !Array.isArray(s?.timeline?.marks)
    ) {
      throw new TypeError(
        `limits: argument "series[${i}]" of renderTimelineSvg() must be { name: string, timeline: Timeline }, got ${formatValue(s)}`,
      );
    }
    const bucketMs = s.timeline.bucketMs as unknown;
    if (typeof bucketMs !== 'number' || !(bucketMs >= MIN_BUCKET_MS && bucketMs <= MAX_BUCKET_MS)) {
      const Kind = typeof bucketMs === 'number' && !Number.isNaN(bucketMs) ? RangeError : TypeError;
      throw new Kind(
        `limits: argument "series[${i}].timeline.bucketMs" of renderTimelineSvg() must be a number in [${MIN_BUCKET_MS}, ${MAX_BUCKET_MS}], got ${formatValue(bucketMs)}`,
      );
    }
  });
  checkKeys('renderTimelineSvg options', options, KEYS);
  const title = checkString('title', options.title);
  const width = checkNumber('width', options.width, 1200, { min: 320, max: 10_000 });
  const panelHeight = checkNumber('panelHeight', options.panelHeight, 110, {
    min: 60,
    max: 2_000,
  });

  const colWidth = (width - 2 * MARGIN - PANELS.length * AXIS - (PANELS.length - 1) * COL_GAP) / 3;
  const panelX = (c: number) => MARGIN + AXIS + c * (colWidth + AXIS + COL_GAP);
  // The end of the last bucket drawn (points need not be in order).
  let endMs = 1;
  for (const s of series) {
    for (const p of s.timeline.points) {
      if (drawn(p.t) && p.t + s.timeline.bucketMs > endMs) endMs = p.t + s.timeline.bucketMs;
    }
  }
  const xIn = (c: number, ms: number) =>
    panelX(c) + (Math.max(0, Math.min(ms, endMs)) / endMs) * colWidth;
  const timeStep = niceCeil(endMs / Math.max(2, Math.floor(colWidth / 55)));
  const times: number[] = [];
  for (let t = 0; t <= endMs + 1e-9 && times.length < 100; t += timeStep) times.push(t);

  // One y range per panel for all rows, except where each row has its own.
  const shared = PANELS.map((panel) => scale(series.map((s) => peak(s, panel))));
  const stateOf = (s: TimelineSeries) =>
    s.timeline.points.some((p) => p.state !== undefined && drawn(p.t));

  // The rows first (what they hold decides the legend), then the legend above them.
  const rows: string[] = [];
  let gaps = false;
  let y = 0;
  series.forEach((s, k) => {
    const color = COLORS[k % COLORS.length] as string;
    const bucketMs = s.timeline.bucketMs;
    const half = bucketMs / 2;
    rows.push(
      `<text class="row" x="${MARGIN}" y="${y + 11}" font-size="12" font-weight="bold" fill="${color}">${escapeXml(s.name)}</text>`,
    );
    const top = y + 24;
    PANELS.forEach((panel, c) => {
      const { top: max, ticks } = panel.ownScale ? scale([peak(s, panel)]) : (shared[c] as Scale);
      const x0 = panelX(c);
      const py = (v: number) => top + panelHeight - (Math.min(v, max) / max) * panelHeight;
      rows.push(
        `<g class="panel" data-panel="${c}" data-series="${escapeXml(s.name)}">`,
        `<rect x="${n(x0)}" y="${top}" width="${n(colWidth)}" height="${panelHeight}" fill="#ffffff" stroke="#bbbbbb"/>`,
      );
      for (const m of uniqueMarks(s)) {
        const a = xIn(c, m.fromMs);
        rows.push(
          `<rect class="mark" x="${n(a)}" y="${top}" width="${n(Math.max(1, xIn(c, m.toMs) - a))}" height="${panelHeight}" fill="${MARK_FILL}" fill-opacity="${MARK_OPACITY}"><title>${escapeXml(markLabel(m))}</title></rect>`,
        );
      }
      for (const tick of ticks) {
        const ty = n(py(tick));
        rows.push(
          `<line x1="${n(x0)}" y1="${ty}" x2="${n(x0 + colWidth)}" y2="${ty}" stroke="#eeeeee"/>`,
          `<text x="${n(x0 - 5)}" y="${n(py(tick) + 4)}" text-anchor="end" fill="#555555">${fmt(tick)}</text>`,
        );
      }
      for (const t of times) {
        const tx = n(xIn(c, t));
        rows.push(
          `<line x1="${tx}" y1="${top}" x2="${tx}" y2="${top + panelHeight}" stroke="#eeeeee"/>`,
        );
      }
      const perSecond = panel.rate ? 1000 / bucketMs : 1;
      for (const line of panel.lines) {
        const { d, gap } = path(
          s.timeline.points,
          (p) => line.value(p) * perSecond,
          (p) => xIn(c, p.t + half),
          py,
        );
        gaps ||= gap;
        if (d === '') continue;
        rows.push(
          `<path class="series" data-series="${escapeXml(s.name)}" data-line="${line.key}" d="${d}" fill="none" stroke="${color}" stroke-width="1.5"${line.dash === '' ? '' : ` stroke-dasharray="${line.dash}"`}/>`,
        );
      }
      rows.push('</g>');
    });
    y = top + panelHeight;
    if (stateOf(s)) {
      const spans = stateSpans(s);
      PANELS.forEach((_, c) => {
        for (const { state, fromMs, toMs } of spans) {
          const a = xIn(c, fromMs);
          rows.push(
            `<rect class="state" data-state="${state}" x="${n(a)}" y="${y + 2}" width="${n(Math.max(0.5, xIn(c, toMs) - a))}" height="${BAND}" fill="${STATE_COLORS[state]}"/>`,
          );
        }
      });
      y += BAND + 2;
    }
    PANELS.forEach((_, c) => {
      for (const t of times) {
        const tx = n(xIn(c, t));
        rows.push(`<line x1="${tx}" y1="${y}" x2="${tx}" y2="${y + 4}" stroke="#888888"/>`);
      }
    });
    y += k === series.length - 1 ? 4 : 16;
  });
  // The time axis under the last row: tick labels and its title.
  PANELS.forEach((_, c) => {
    for (const t of times) {
      rows.push(
        `<text x="${n(xIn(c, t))}" y="${y + 12}" text-anchor="middle" fill="#555555">${fmt(t / 1000)}</text>`,
      );
    }
    rows.push(
      `<text class="axis-title" x="${n(panelX(c) + colWidth / 2)}" y="${y + 28}" text-anchor="middle" fill="#333333">time since start (s)</text>`,
    );
  });
  const rowsHeight = y + 36;

  // Heading, legend and panel headings (with each panel's line key), then the rows below them.
  const head: string[] = [];
  let top = MARGIN;
  if (title !== undefined) {
    head.push(
      `<text class="title" x="${MARGIN}" y="${top + 14}" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    );
    top += 26;
  }
  const legend: Array<{ swatch: (x: number, y: number) => string; label: string }> = [];
  // One entry per label, with every distinct span it has (series recorded apart mark the same event
  // at slightly different times).
  const spans = new Map<string, string[]>();
  for (const s of series) {
    for (const m of uniqueMarks(s)) {
      const span = markSpan(m);
      const known = spans.get(m.label);
      if (known === undefined) spans.set(m.label, [span]);
      else if (!known.includes(span)) known.push(span);
    }
  }
  for (const [label, list] of spans) {
    const shown = list.length > 3 ? [...list.slice(0, 3), '…'] : list;
    legend.push({
      swatch: (x, ly) =>
        `<rect x="${x}" y="${ly - 9}" width="22" height="11" fill="${MARK_FILL}" fill-opacity="${MARK_OPACITY}"/>`,
      label: `shaded: ${label} ${shown.join(', ')}`,
    });
  }
  if (series.some(stateOf)) {
    for (const state of ['CLOSED', 'OPEN', 'HALF_OPEN'] as const) {
      legend.push({
        swatch: (x, ly) =>
          `<rect x="${x}" y="${ly - 7}" width="22" height="${BAND}" fill="${STATE_COLORS[state]}"/>`,
        label: `band: ${STATE_NAMES[state]}`,
      });
    }
  }
  if (gaps) {
    const widths = new Set(series.map((s) => s.timeline.bucketMs));
    const bucket = widths.size === 1 ? `${fmt([...widths][0] as number)} ms bucket` : 'bucket';
    legend.push({
      swatch: (x, ly) =>
        `<path d="M${x},${ly - 4}L${x + 8},${ly - 4}M${x + 14},${ly - 4}L${x + 22},${ly - 4}" stroke="#555555" stroke-width="1.5"/>`,
      label: `gap in a line: nothing to draw for that ${bucket} (no call ended in it, or no limit known)`,
    });
  }
  let lx = MARGIN;
  let ly = top + 12;
  for (const item of legend) {
    const itemWidth = 30 + textWidth(item.label) + 18;
    if (lx > MARGIN && lx + itemWidth > width - MARGIN) {
      lx = MARGIN;
      ly += 18;
    }
    head.push(
      item.swatch(lx, ly),
      `<text class="legend" x="${lx + 28}" y="${ly}" fill="#333333">${escapeXml(item.label)}</text>`,
    );
    lx += itemWidth;
  }
  if (legend.length > 0) top = ly + 14;
  // Each panel's key wraps onto more lines where its panel is too narrow for it.
  let keyLines = 1;
  PANELS.forEach((panel, c) => {
    const x0 = panelX(c) - AXIS + 4;
    head.push(
      `<text class="axis-title" x="${n(x0)}" y="${top + 12}" font-weight="bold" fill="#333333">${escapeXml(panel.heading)}</text>`,
    );
    let kx = x0;
    let ky = top + 24;
    let lines = 1;
    for (const line of panel.lines) {
      const itemWidth = 27 + textWidth(line.label);
      if (kx > x0 && kx + itemWidth > panelX(c) + colWidth) {
        kx = x0;
        ky += 15;
        lines++;
      }
      head.push(
        `<line x1="${n(kx)}" y1="${ky}" x2="${n(kx + 22)}" y2="${ky}" stroke="#444444" stroke-width="1.5"${line.dash === '' ? '' : ` stroke-dasharray="${line.dash}"`}/>`,
        `<text class="legend" x="${n(kx + 27)}" y="${ky + 4}" fill="#333333">${escapeXml(line.label)}</text>`,
      );
      kx += itemWidth + 16;
    }
    keyLines = Math.max(keyLines, lines);
  });
  top += 38 + 15 * (keyLines - 1);

  const height = Math.ceil(top + rowsHeight);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    ...head,
    `<g transform="translate(0 ${top})">`,
    ...rows,
    '</g>',
    '</svg>',
  ];
  return `${out.join('\n')}\n`;
}

/** A y range: its top and round tick values from 0 to it. */
interface Scale {
  top: number;
  ticks: number[];
}

/** The highest drawable value of `panel`'s lines in `s` (per second for a rate panel). */
function peak(s: TimelineSeries, panel: PanelDef): number {
  const perSecond = panel.rate ? 1000 / s.timeline.bucketMs : 1;
  let max = 0;
  for (const p of s.timeline.points) {
    if (!drawn(p.t)) continue;
    for (const line of panel.lines) {
      const v = line.value(p) * perSecond;
      if (drawn(v) && v > max) max = v;
    }
  }
  return max;
}

/** Round ticks (a 1, 2 or 5 × 10^k step, about four of them) from 0 to at least the highest peak. */
function scale(peaks: readonly number[]): Scale {
  const max = Math.max(0, ...peaks.filter(drawn));
  const step = niceCeil(max / 4);
  const top = Math.max(step, Math.ceil(max / step) * step);
  if (!Number.isFinite(top) || top / step > 10) return { top: max > 0 ? max : 1, ticks: [0, max] };
  const ticks: number[] = [];
  for (let i = 0; i * step <= top * (1 + 1e-9); i++) ticks.push(i * step);
  return { top, ticks };
}

/** The circuit states of a series as spans: adjacent buckets in one state make one span. */
function stateSpans(
  s: TimelineSeries,
): Array<{ state: TimelineState; fromMs: number; toMs: number }> {
  const bucketMs = s.timeline.bucketMs;
  const points = s.timeline.points
    .filter((p) => p.state !== undefined && drawn(p.t))
    .sort((a, b) => a.t - b.t);
  const spans: Array<{ state: TimelineState; fromMs: number; toMs: number }> = [];
  for (const p of points) {
    const last = spans[spans.length - 1];
    if (last !== undefined && last.state === p.state && last.toMs === p.t) {
      last.toMs = p.t + bucketMs;
    } else {
      spans.push({ state: p.state as TimelineState, fromMs: p.t, toMs: p.t + bucketMs });
    }
  }
  return spans;
}

/** The marks of a series, each drawable one once. */
function uniqueMarks(s: TimelineSeries): TimelineMark[] {
  const seen = new Set<string>();
  const marks: TimelineMark[] = [];
  for (const m of s.timeline.marks) {
    if (!Number.isFinite(m.fromMs) || !Number.isFinite(m.toMs)) continue;
    const key = `${m.label}:${m.fromMs}:${m.toMs}`;
    if (seen.has(key)) continue;
    seen.add(key);
    marks.push(m);
  }
  return marks;
}

/** A mark's label with its span in seconds: "latency spike 2.5–7.5 s". */
function markLabel(m: TimelineMark): string {
  return `${m.label} ${markSpan(m)}`;
}

/** A mark's span in seconds, to a tenth (a hundredth for a span under a second): "2.5–7.5 s". */
function markSpan(m: TimelineMark): string {
  const digits = m.toMs - m.fromMs < 1000 ? 2 : 1;
  const s = (ms: number) => String(Number((Math.max(0, ms) / 1000).toFixed(digits)));
  return `${s(m.fromMs)}–${s(m.toMs)} s`;
}

/** About how wide `text` is at the chart's 11 px sans-serif, in px (for laying out the legend). */
function textWidth(text: string): number {
  return text.length * 6.2;
}

/** Whether `v` can be drawn: a finite number ≥ 0 (a time, a limit, a count, a latency). */
function drawn(v: number): boolean {
  return Number.isFinite(v) && v >= 0;
}

/**
 * An SVG path through the points with a drawable `t` and value (a gap where a value is missing,
 * negative or not finite), and whether it has such a gap.
 */
function path(
  points: readonly TimelinePoint[],
  value: (p: TimelinePoint) => number,
  px: (p: TimelinePoint) => number,
  py: (v: number) => number,
): { d: string; gap: boolean } {
  let d = '';
  let pen = false;
  let gap = false;
  for (const p of points) {
    if (!drawn(p.t)) continue;
    const v = value(p);
    if (!drawn(v)) {
      pen = false;
      gap = true;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${n(px(p))},${n(py(v))}`;
    pen = true;
  }
  return { d, gap };
}

/**
 * The smallest 1, 2 or 5 × 10^k at or above `v` (1 for 0); `v` itself where that is not a finite
 * number (near the largest double) or underflows (a subnormal `v`).
 */
function niceCeil(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) {
    if (m * p >= v) return Number.isFinite(m * p) ? m * p : v;
  }
  return v;
}

function n(v: number): string {
  return String(Math.round(v * 10) / 10);
}

/** A tick value: whole from 100 up, else up to three significant digits (0.05, 2.5, 12). */
function fmt(v: number): string {
  return Math.abs(v) >= 100 || Number.isInteger(v)
    ? String(Math.round(v))
    : String(Number(v.toPrecision(3)));
}

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
