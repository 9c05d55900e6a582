import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from 'limits-core';
import type { Registry } from 'prom-client';

/** A clock whose time moves only by `set`/`advance`; its timers never fire (these tests need none). */
export function manualClock(): Clock & { advance(ms: number): void } {
  let now = 0;
  let id = 0;
  return {
    now: () => now,
    setTimeout: () => ++id,
    clearTimeout: () => {},
    advance(ms: number) {
      now += ms;
    },
  };
}

/** One parsed exposition: samples by `name{label="value",…}` (labels sorted), and `# TYPE` lines. */
export interface Exposition {
  samples: Map<string, number>;
  types: Map<string, string>;
  helps: Map<string, string>;
  /** The value of one series; throws when it is absent (so a missing series fails the test). */
  value(name: string, labels?: Record<string, string>): number;
  /** Series names present (without labels). */
  names(): Set<string>;
}

/** Series key: the name and its labels sorted by label name. */
export function seriesKey(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return parts.length === 0 ? name : `${name}{${parts.join(',')}}`;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

/** Parses the Prometheus text exposition format (0.0.4): enough for prom-client's output, strictly. */
export function parseExposition(text: string): Exposition {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  const helps = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      types.set(name as string, type as string);
      continue;
    }
    if (line.startsWith('# HELP ')) {
      const rest = line.slice(7);
      const space = rest.indexOf(' ');
      helps.set(rest.slice(0, space), rest.slice(space + 1));
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const at = LABEL.lastIndex;
      const l = LABEL.exec(body);
      if (l === null) throw new Error(`bad labels at ${at} in: ${line}`);
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    const raw = m[3] as string;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`bad value in: ${line}`);
    const key = seriesKey(m[1] as string, labels);
    if (samples.has(key)) throw new Error(`duplicate series ${key}`);
    samples.set(key, value);
  }
  return {
    samples,
    types,
    helps,
    value(name, labels) {
      const key = seriesKey(name, labels);
      const v = samples.get(key);
      if (v === undefined) throw new Error(`series ${key} is absent`);
      return v;
    },
    names() {
      return new Set([...samples.keys()].map((k) => k.replace(/\{.*$/, '')));
    },
  };
}

/** A real node:http server on 127.0.0.1 (port 0) serving `registry.metrics()` at `/metrics`. */
export async function metricsServer(
  registry: Registry,
): Promise<{ scrape(): Promise<Exposition>; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    async scrape() {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
      if (!response.headers.get('content-type')?.startsWith('text/plain'))
        throw new Error(`content-type ${response.headers.get('content-type')}`);
      return parseExposition(await response.text());
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
