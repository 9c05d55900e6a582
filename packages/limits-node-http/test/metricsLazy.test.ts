import { createRequire } from 'node:module';
import { Limiter } from 'limits-core';
import { describe, expect, it } from 'vitest';

// This file never imports prom-client or @opentelemetry/api itself: it checks that the package
// does not either.
const require = createRequire(import.meta.url);
const loaded = (name: string) =>
  Object.keys(require.cache).some((k) => k.includes(`/node_modules/${name}/`));

describe('prom-client and @opentelemetry/api are optional peers', () => {
  it('neither is loaded by importing the package or registering on a meter; prom-client only by the first registerMetrics call', async () => {
    const { registerMetrics, registerOtelMetrics, publishDiagnostics } = await import(
      '../src/index.js'
    );
    publishDiagnostics(new Limiter({ limit: 1 }));
    expect(loaded('prom-client')).toBe(false);
    expect(loaded('@opentelemetry')).toBe(false);
    // registerOtelMetrics works on any meter of the API's shape, without loading the API.
    const calls: string[] = [];
    const meter = {
      createObservableGauge(name: string) {
        calls.push(name);
        return {};
      },
      createCounter(name: string) {
        calls.push(name);
        return { add() {} };
      },
      createHistogram(name: string) {
        calls.push(name);
        return { record() {} };
      },
      addBatchObservableCallback() {},
      removeBatchObservableCallback() {},
    };
    registerOtelMetrics(meter, new Limiter({ limit: 1 }), { limiter: 'db' }).close();
    expect(calls).toHaveLength(10);
    expect(loaded('@opentelemetry')).toBe(false);
    const metrics = new Map<string, unknown>();
    const registry = {
      registerMetric: (m: unknown) => metrics.set((m as { name: string }).name, m),
      getSingleMetric: (name: string) => metrics.get(name),
      removeSingleMetric: (name: string) => metrics.delete(name),
    };
    const handle = registerMetrics(registry, new Limiter({ limit: 1 }), { limiter: 'db' });
    expect(loaded('prom-client')).toBe(true);
    expect(metrics.size).toBe(10);
    handle.close();
    expect(metrics.size).toBe(0);
    // (prom-client itself requires @opentelemetry/api for its exemplars, once loaded.)
  });
});
