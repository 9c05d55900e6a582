import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { guard } from 'limits-breaker';
import { Limiter, PartitionedLimiter, Quota, RetryBudget, RetryPolicy } from 'limits-core';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadShed, METRICS, registerMetrics } from '../src/index.js';

const dashboard = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'dashboards', 'limits.json'), 'utf8'),
) as {
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  templating: { list: Array<{ name: string; query: unknown }> };
};

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
]);

/**
 * The metric names and label names a PromQL expression uses: strings and range selectors are
 * dropped, a name before `(` is a function, names in `by (…)`/`without (…)`/`on (…)`/… and before `=`/`=~`/
 * `!=`/`!~` inside braces are labels, the other names are metrics.
 */
function promqlNames(expr: string): { metrics: Set<string>; labels: Set<string> } {
  const metrics = new Set<string>();
  const labels = new Set<string>();
  let rest = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\[[^\]]*\]/g, '');
  rest = rest.replace(
    /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_, list: string) => {
      for (const l of list.split(',')) if (l.trim() !== '') labels.add(l.trim());
      return ' ';
    },
  );
  rest = rest.replace(/\{([^}]*)\}/g, (_, body: string) => {
    for (const m of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) {
      labels.add(m[1] as string);
    }
    return ' ';
  });
  for (const m of rest.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const name = m[1] as string;
    if (m[2] !== undefined || KEYWORDS.has(name)) continue;
    metrics.add(name);
  }
  return { metrics, labels };
}

/** Every series name and label name the package registers, from prom-client itself. */
async function registered(): Promise<{ names: Set<string>; labels: Set<string> }> {
  const registry = new Registry();
  const g = guard(async () => 'ok', { limiter: { limit: 1 }, timeoutMs: false });
  const quota = new Quota({
    windowMs: 1000,
    axes: [{ name: 'global', key: () => 'all', limit: 1 }],
  });
  const budget = new RetryBudget();
  const handles = [
    registerMetrics(registry, loadShed({ limiter: new Limiter({ limit: 1 }), quota }), {
      limiter: 'api',
      retry: new RetryPolicy({ budget }),
      retryBudget: budget,
    }),
    registerMetrics(
      registry,
      new PartitionedLimiter({ limit: 2, partitions: { a: {}, default: {} } }),
      { limiter: 'bulk' },
    ),
    registerMetrics(registry, g, { limiter: 'pay' }),
  ];
  const names = new Set<string>();
  const labels = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const v of metric.values) {
      names.add((v as { metricName?: string }).metricName ?? metric.name);
      for (const l of Object.keys(v.labels)) labels.add(l);
    }
  }
  for (const h of handles) h.close();
  await g.shutdown();
  return { names, labels };
}

describe('the Grafana dashboard', () => {
  it('the PromQL reader finds metrics and labels, and skips functions, keywords, strings and ranges', () => {
    expect(
      promqlNames(
        'histogram_quantile(0.99, sum by (limiter, le) (rate(x_bucket{limiter=~"$limiter", a!="b"}[5m]))) / on(limiter) y',
      ),
    ).toEqual({ metrics: new Set(['x_bucket', 'y']), labels: new Set(['limiter', 'le', 'a']) });
  });

  it('uses only metric names and labels the package registers, and every metric family appears in a panel', async () => {
    const { names, labels } = await registered();
    // The registration covers the whole scheme (so the check below is against every name).
    for (const spec of Object.values(METRICS)) {
      const series =
        spec.kind === 'histogram'
          ? ['_bucket', '_sum', '_count'].map((s) => spec.prom + s)
          : [spec.prom];
      for (const s of series) expect(names, s).toContain(s);
    }
    const used = new Set<string>();
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => [p.title, t.expr]));
    expect(exprs.length).toBeGreaterThanOrEqual(12);
    for (const [title, expr] of exprs) {
      const found = promqlNames(expr as string);
      expect(found.metrics.size, `${title}: ${expr}`).toBeGreaterThan(0);
      for (const m of found.metrics) {
        expect(names, `${title}: ${expr}`).toContain(m);
        used.add(m);
      }
      for (const l of found.labels) expect(labels, `${title}: ${expr}`).toContain(l);
      // Every query is narrowed by the limiter variable.
      expect(expr, title).toContain('limiter=~"$limiter"');
    }
    for (const spec of Object.values(METRICS)) {
      expect(
        [...used].some((u) => u === spec.prom || u.startsWith(`${spec.prom}_`)),
        spec.prom,
      ).toBe(true);
    }
  });

  it('has a limiter template variable read from limits_limit', () => {
    const limiter = dashboard.templating.list.find((v) => v.name === 'limiter');
    expect(limiter?.query).toEqual({
      query: 'label_values(limits_limit, limiter)',
      refId: 'limiter',
    });
  });
});
