import { createRequire } from 'node:module';
import { Limiter } from 'limits-core';
import { describe, expect, it } from 'vitest';

// This file never imports prom-client itself: it checks that the package does not either.
const require = createRequire(import.meta.url);
const promClientLoaded = () => Object.keys(require.cache).some((k) => k.includes('prom-client'));

describe('prom-client is an optional peer', () => {
  it('is not loaded by importing the package, only by the first registerMetrics call', async () => {
    const { registerMetrics, publishDiagnostics } = await import('../src/index.js');
    publishDiagnostics(new Limiter({ limit: 1 }));
    expect(promClientLoaded()).toBe(false);
    const metrics = new Map<string, unknown>();
    const registry = {
      registerMetric: (m: unknown) => metrics.set((m as { name: string }).name, m),
      getSingleMetric: (name: string) => metrics.get(name),
      removeSingleMetric: (name: string) => metrics.delete(name),
    };
    const handle = registerMetrics(registry, new Limiter({ limit: 1 }));
    expect(promClientLoaded()).toBe(true);
    expect(metrics.size).toBe(9);
    handle.unregister();
    expect(metrics.size).toBe(0);
  });
});
