import { checkKeys, checkNumber, checkString, formatValue } from 'limits-core/internal';
import {
  MAX_BUCKET_MS,
  MIN_BUCKET_MS,
  type Timeline,
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
  /** Heading drawn above the panels. Default: none. */
  title?: string;
  /** Width in px. Default 960; range [320, 10,000]. */
  width?: number;
  /** Height of each panel in px. Default 150; range [60, 2,000]. */
  panelHeight?: number;
}

const KEYS = ['title', 'width', 'panelHeight'] as const;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2'];
const STATE_COLORS: Record<TimelineState, string> = {
  CLOSED: '#b7e1b0',
  HALF_OPEN: '#ffd98a',
  OPEN: '#f4a3a3',
};
const RIGHT = 16;
const GAP = 34;

/**
 * Draws timelines as a self-contained SVG document (no scripts, no external resources): one panel
 * each for the limit (solid) and peak in-flight count (dashed), the mean latency, and the calls
 * answered per second by outcome (completed solid, refused or sent to a fallback dotted); with a
 * guard, a band per series shows the circuit state. Every series shares the time axis (seconds since
 * its recorder started); marks (e.g. a spike) are shaded across the panels.
 *
 * Numbers that cannot be drawn are left out, never drawn as `NaN` or off the chart: a point whose `t`
 * is not a finite number ≥ 0 is skipped; a value (limit, in-flight, latency, a count) that is not a
 * finite number ≥ 0 leaves a gap in its line; a mark whose `fromMs` or `toMs` is not a finite number
 * is skipped, and one reaching before 0 or past the last point is clipped to the chart.
 *
 * @throws TypeError/RangeError for a bad argument or option, naming it: a series without a `name`,
 *   `points` or `marks` array, a timeline whose `bucketMs` is not a number in [1, 3,600,000] (the
 *   range a {@link TimelineRecorder} takes), `width` or `panelHeight` out of range.
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
  const width = checkNumber('width', options.width, 960, { min: 320, max: 10_000 });
  const panelHeight = checkNumber('panelHeight', options.panelHeight, 150, {
    min: 60,
    max: 2_000,
  });

  const hasState = series.some((s) => s.timeline.points.some((p) => p.state !== undefined));
  // Room on the left for the axis labels, and for the series names of the circuit-state bands.
  const LEFT = Math.max(
    56,
    hasState ? 12 + 6.5 * Math.max(...series.map((s) => s.name.length)) : 0,
  );
  const top = title === undefined ? 12 : 40;
  const panels = 3;
  const bandHeight = 14;
  const stateTop = top + panels * (panelHeight + GAP);
  const legendTop = stateTop + (hasState ? series.length * (bandHeight + 4) + 12 : 0);
  const height = legendTop + 20 * Math.ceil(series.length / 3) + 40;
  const plotWidth = width - LEFT - RIGHT;
  // The end of the last bucket drawn (points need not be in order).
  let endMs = 1;
  for (const s of series) {
    for (const p of s.timeline.points) {
      if (drawn(p.t) && p.t + s.timeline.bucketMs > endMs) endMs = p.t + s.timeline.bucketMs;
    }
  }
  const x = (ms: number) => LEFT + (Math.max(0, Math.min(ms, endMs)) / endMs) * plotWidth;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
  );
  if (title !== undefined) {
    out.push(
      `<text x="${LEFT}" y="24" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    );
  }

  // Shaded marks, across every panel.
  // One shaded span per distinct mark; its label once (series recorded apart mark the same event at
  // slightly different times).
  const seen = new Set<string>();
  const labelled = new Set<string>();
  for (const s of series) {
    for (const m of s.timeline.marks) {
      if (!Number.isFinite(m.fromMs) || !Number.isFinite(m.toMs)) continue;
      const key = `${m.label}:${m.fromMs}:${m.toMs}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const x0 = x(m.fromMs);
      const w = Math.max(1, x(m.toMs) - x0);
      out.push(
        `<rect class="mark" x="${n(x0)}" y="${top}" width="${n(w)}" height="${n(panels * (panelHeight + GAP) - GAP)}" fill="#999999" fill-opacity="${(0.15 / Math.max(1, series.length)).toFixed(3)}"><title>${escapeXml(m.label)}</title></rect>`,
      );
      if (labelled.has(m.label)) continue;
      labelled.add(m.label);
      out.push(
        `<text x="${n(x0 + 3)}" y="${top + 11}" fill="#666666">${escapeXml(m.label)}</text>`,
      );
    }
  }

  const panelDefs: Array<{ label: string; lines: Array<[(p: TimelinePoint) => number, string]> }> =
    [
      {
        label: 'limit (solid) / peak in flight (dashed)',
        lines: [
          [(p) => p.limit, ''],
          [(p) => p.inflightMax, '5,3'],
        ],
      },
      { label: 'mean latency (ms)', lines: [[(p) => p.latencyMs, '']] },
      {
        label: 'per second: completed (solid) / refused + fallbacks (dotted)',
        lines: [
          [(p) => p.success + p.dropped + p.failure + p.ignore, ''],
          [(p) => p.rejected + p.fallbacks, '2,3'],
        ],
      },
    ];
  panelDefs.forEach((panel, i) => {
    const y0 = top + i * (panelHeight + GAP);
    const rate = i === 2;
    let max = 0;
    for (const s of series) {
      const scale = rate ? 1000 / s.timeline.bucketMs : 1;
      for (const p of s.timeline.points) {
        if (!drawn(p.t)) continue;
        for (const [value] of panel.lines) {
          const v = value(p) * scale;
          if (drawn(v) && v > max) max = v;
        }
      }
    }
    max = niceCeil(max);
    const y = (v: number) => y0 + panelHeight - (Math.min(v, max) / max) * panelHeight;
    out.push(
      `<g class="panel" data-panel="${i}">`,
      `<rect x="${LEFT}" y="${y0}" width="${plotWidth}" height="${panelHeight}" fill="none" stroke="#cccccc"/>`,
      `<text x="${LEFT}" y="${y0 - 5}" fill="#333333">${escapeXml(panel.label)}</text>`,
    );
    for (const tick of [0, max / 2, max]) {
      out.push(
        `<text x="${LEFT - 6}" y="${n(y(tick) + 4)}" text-anchor="end" fill="#555555">${fmt(tick)}</text>`,
      );
    }
    for (const t of timeTicks(endMs)) {
      out.push(
        `<line x1="${n(x(t))}" y1="${y0 + panelHeight}" x2="${n(x(t))}" y2="${y0 + panelHeight + 4}" stroke="#999999"/>`,
        `<text x="${n(x(t))}" y="${y0 + panelHeight + 15}" text-anchor="middle" fill="#555555">${fmt(t / 1000)}s</text>`,
      );
    }
    series.forEach((s, k) => {
      const color = COLORS[k % COLORS.length];
      const scale = rate ? 1000 / s.timeline.bucketMs : 1;
      const half = s.timeline.bucketMs / 2;
      for (const [value, dash] of panel.lines) {
        const d = path(
          s.timeline.points,
          (p) => value(p) * scale,
          (p) => x(p.t + half),
          y,
        );
        if (d === '') continue;
        out.push(
          `<path class="series" data-series="${escapeXml(s.name)}" d="${d}" fill="none" stroke="${color}" stroke-width="1.5"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}/>`,
        );
      }
    });
    out.push('</g>');
  });

  if (hasState) {
    out.push(`<text x="${LEFT}" y="${stateTop - 5}" fill="#333333">circuit state</text>`);
    series.forEach((s, k) => {
      const y0 = stateTop + k * (bandHeight + 4);
      out.push(
        `<text x="${LEFT - 6}" y="${y0 + 11}" text-anchor="end" fill="#555555">${escapeXml(s.name)}</text>`,
      );
      for (const p of s.timeline.points) {
        if (p.state === undefined || !drawn(p.t)) continue;
        const x0 = x(p.t);
        const w = Math.max(0.5, x(p.t + s.timeline.bucketMs) - x0);
        out.push(
          `<rect x="${n(x0)}" y="${y0}" width="${n(w)}" height="${bandHeight}" fill="${STATE_COLORS[p.state]}"/>`,
        );
      }
    });
  }

  series.forEach((s, k) => {
    const lx = LEFT + (k % 3) * 220;
    const ly = legendTop + 14 + Math.floor(k / 3) * 20;
    const color = COLORS[k % COLORS.length];
    out.push(
      `<line x1="${lx}" y1="${ly - 4}" x2="${lx + 24}" y2="${ly - 4}" stroke="${color}" stroke-width="3"/>`,
      `<text class="legend" x="${lx + 30}" y="${ly}">${escapeXml(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/** Whether `v` can be drawn: a finite number ≥ 0 (a time, a limit, a count, a latency). */
function drawn(v: number): boolean {
  return Number.isFinite(v) && v >= 0;
}

/**
 * An SVG path through the points with a drawable `t` and value (a gap where a value is missing,
 * negative or not finite).
 */
function path(
  points: readonly TimelinePoint[],
  value: (p: TimelinePoint) => number,
  px: (p: TimelinePoint) => number,
  py: (v: number) => number,
): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (!drawn(p.t)) continue;
    const v = value(p);
    if (!drawn(v)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${n(px(p))},${n(py(v))}`;
    pen = true;
  }
  return d;
}

/** About five round tick positions (ms) from 0 to `endMs`. */
function timeTicks(endMs: number): number[] {
  const step = niceCeil(endMs / 5);
  const ticks: number[] = [];
  for (let t = 0; t <= endMs + 1e-9; t += step) ticks.push(t);
  return ticks;
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

function fmt(v: number): string {
  return Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
}

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
