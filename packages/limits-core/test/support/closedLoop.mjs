// The closed-loop simulation behind the convergence tests (through simulate.ts) and
// bench/convergence-report.mjs (against the built package): plain JavaScript so that both can run
// it; its types are in closedLoop.d.mts.

/**
 * A deterministic closed-loop simulation: the caller always has more work than the limit, so
 * `floor(limit)` requests are kept in flight. A request started with `n` in flight (itself included)
 * takes `B × max(1, n / C)` ms with a little noise from `random`; each completion feeds one sample to
 * the algorithm, then new requests start up to the new limit. Time is simulated, no timers are used.
 */
export function closedLoop(algorithm, model, samples, random) {
  const noise = model.noise ?? 0.05;
  const timeoutMs = model.timeoutMs ?? Infinity;
  const base =
    typeof model.baseLatencyMs === 'number' ? () => model.baseLatencyMs : model.baseLatencyMs;
  // Min-heap of in-flight requests by completion time.
  const heap = [];
  const push = (x) => {
    heap.push(x);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (heap[p].end <= x.end) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = x;
  };
  const pop = () => {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        let mv = last.end;
        if (l < heap.length && heap[l].end < mv) {
          m = l;
          mv = heap[l].end;
        }
        if (r < heap.length && heap[r].end < mv) m = r;
        if (m === i) break;
        heap[i] = heap[m];
        i = m;
      }
      heap[i] = last;
    }
    return top;
  };
  let now = 0;
  let completed = 0;
  const steps = [];
  const fill = () => {
    const cap = Math.max(1, Math.floor(algorithm.limit));
    while (heap.length < cap) {
      const n = heap.length + 1;
      const rtt =
        base(completed) * Math.max(1, n / model.capacity) * (1 + noise * (2 * random() - 1));
      push({ start: now, end: now + rtt, rtt, inflight: n });
    }
  };
  fill();
  while (completed < samples) {
    const r = pop();
    now = r.end;
    completed++;
    const sample = {
      startTime: r.start,
      rtt: r.rtt,
      inflight: r.inflight,
      dropped: r.rtt > timeoutMs,
    };
    const limit = algorithm.update(sample);
    steps.push({ sample, limit });
    fill();
  }
  return steps;
}

/** Wraps `algorithm` so that the reason of its `lastDecision` after every sample lands in `reasons`. */
export function tracing(algorithm) {
  const reasons = [];
  const traced = {
    get limit() {
      return algorithm.limit;
    },
    update(sample) {
      const limit = algorithm.update(sample);
      reasons.push(algorithm.lastDecision?.reason ?? '');
      return limit;
    },
  };
  return { traced, reasons };
}
