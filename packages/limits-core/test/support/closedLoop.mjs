// The closed-loop simulation behind the convergence tests (through simulate.ts) and
// bench/convergence-report.mjs (against the built package): plain JavaScript so that both can run
// it; its types are in closedLoop.d.mts.

/**
 * A deterministic closed-loop simulation: the caller always has more work than the limit (or, with
 * `model.demand`, wants that many requests in flight at most), so `min(floor(limit), demand)`
 * requests are kept in flight. A request started with `n` in flight (itself included) takes
 * `B × max(1, n / C)` ms with a little noise from `random`; each completion feeds one sample to the
 * algorithm, then new requests start up to the new limit. Time is simulated, no timers are used.
 *
 * With `model.tickMs`, a limiter's tick is simulated every `tickMs` ms while requests are in flight:
 * requests still outstanding past the algorithm's `lateAfterMs` are reported once each through
 * `onLate(count, inflight)`, as a `Limiter` does from its stall detector's ticks, and their samples
 * are not fed to `update` when they complete (the step is recorded; `tracing` records the reason
 * `reported-late`).
 */
export function closedLoop(algorithm, model, samples, random) {
  const noise = model.noise ?? 0.05;
  const timeoutMs = model.timeoutMs ?? Infinity;
  const base =
    typeof model.baseLatencyMs === 'number' ? () => model.baseLatencyMs : model.baseLatencyMs;
  const demand =
    model.demand === undefined
      ? () => Infinity
      : typeof model.demand === 'number'
        ? () => model.demand
        : model.demand;
  const tickMs = model.tickMs ?? Infinity;
  let nextTick = tickMs;
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
    const cap = Math.min(Math.max(1, Math.floor(algorithm.limit)), demand(completed));
    while (heap.length < cap) {
      // With `burst`, the requests started together all meet the downstream at their final count.
      const n = model.burst ? cap : heap.length + 1;
      const took =
        base(completed, now) * Math.max(1, n / model.capacity) * (1 + noise * (2 * random() - 1));
      // A client timeout ends the call (and its permit) at the timeout, as a dropped sample.
      const dropped = took > timeoutMs;
      const rtt = dropped ? timeoutMs : took;
      push({ start: now, end: now + rtt, rtt, inflight: n, dropped, late: false });
    }
  };
  const tick = () => {
    const after = algorithm.lateAfterMs ?? Infinity;
    let count = 0;
    for (const r of heap) {
      if (!r.late && now - r.start > after) {
        r.late = true;
        count++;
      }
    }
    if (count > 0) algorithm.onLate?.(count, heap.length);
  };
  fill();
  while (completed < samples) {
    while (heap.length > 0 && nextTick < heap[0].end) {
      now = nextTick;
      nextTick += tickMs;
      tick();
    }
    if (heap.length === 0) {
      fill();
      continue;
    }
    const r = pop();
    now = r.end;
    completed++;
    const sample = {
      startTime: r.start,
      rtt: r.rtt,
      inflight: r.inflight,
      dropped: r.dropped,
    };
    // A call reported late was counted then: a limiter does not feed its sample again.
    let limit;
    if (r.late) {
      algorithm.unfed?.(sample);
      limit = algorithm.limit;
    } else {
      limit = algorithm.update(sample);
    }
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
    get lateAfterMs() {
      return algorithm.lateAfterMs;
    },
    onLate(count, inflight) {
      algorithm.onLate?.(count, inflight);
    },
    unfed() {
      reasons.push('reported-late');
    },
    update(sample) {
      const limit = algorithm.update(sample);
      reasons.push(algorithm.lastDecision?.reason ?? '');
      return limit;
    },
  };
  return { traced, reasons };
}
