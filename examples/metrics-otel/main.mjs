// limits-node-http's OpenTelemetry metrics on a loaded node:http server: a loadShed with room for
// 4 requests at once and 4 queued (for at most 150 ms), registered with registerOtelMetrics on an
// OpenTelemetry SDK meter. 40 requests to /work (50 ms each) arrive at once; /health, exempt from
// load shedding, is asked 10 times meanwhile. Then the SDK collects and the data points are printed:
// admitted and refused requests by reason, outcomes, the queue wait and the requests' durations.
//
//   node metrics-otel/main.mjs      about 1 s
//
// A real application exports with OTLP or OpenTelemetry's Prometheus exporter instead of the
// in-memory exporter used here to print what would be exported.
import { createServer } from 'node:http';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { Limiter } from 'limits-core';
import { loadShed, registerOtelMetrics } from 'limits-node-http';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

const shed = loadShed({
  limiter: new Limiter({ limit: 4, maxQueued: 4, maxQueueWaitMs: 150 }),
  exempt: ['/health'],
});
const handle = registerOtelMetrics(metrics.getMeter('metrics-otel-example'), shed, {
  limiter: 'api',
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const server = createServer(
  shed.wrap(async (req, res) => {
    if (req.url === '/health') return void res.end('up');
    await sleep(50);
    res.end('done');
  }),
);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

const count = (statuses) => {
  const by = {};
  for (const s of statuses) by[s] = (by[s] ?? 0) + 1;
  return Object.entries(by)
    .map(([s, n]) => `${s}: ${n}`)
    .join(', ');
};
const get = async (path) => {
  const response = await fetch(`${base}${path}`);
  await response.arrayBuffer();
  return response.status;
};
const work = Promise.all(Array.from({ length: 40 }, () => get('/work')));
const health = [];
for (let i = 0; i < 10; i++) {
  health.push(await get('/health'));
  await sleep(5);
}
const statuses = await work;
console.log(`/work: ${statuses.length} requests, ${count(statuses)}`);
console.log(`/health during the overload: ${health.length} requests, ${count(health)}`);

await reader.forceFlush();
const exported =
  exporter
    .getMetrics()
    .at(-1)
    ?.scopeMetrics.flatMap((s) => s.metrics) ?? [];
const attrs = (a) =>
  `{${Object.entries(a)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}}`;
console.log('');
for (const m of exported) {
  const { name, unit } = m.descriptor;
  for (const p of m.dataPoints) {
    if (typeof p.value === 'number') {
      // Counters at 0 (every known reason is exported from the start) are left out here.
      if (p.value === 0 && m.dataPointType !== DataPointType.GAUGE) continue;
      console.log(`${name} (${unit}) ${attrs(p.attributes)} ${p.value}`);
    } else if (p.value.count > 0) {
      const mean = p.value.sum / p.value.count;
      console.log(
        `${name} (${unit}) ${attrs(p.attributes)} count ${p.value.count}, mean ${mean.toFixed(3)}`,
      );
    }
  }
}

handle.close();
await reader.shutdown();
server.closeAllConnections();
server.close();
