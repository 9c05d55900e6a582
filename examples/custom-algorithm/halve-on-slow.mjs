// A limit algorithm as a module limits-lab loads: its default export is the class, built once per run.
//
//   npx limits-lab model latency-spike/s1.lab.json --config fixed:50 --config custom-algorithm/halve-on-slow.mjs
//
// The rule: a call more than 4 times slower than the fastest one seen, or dropped, halves the limit
// (once per round trip: calls already in flight at the last cut saw the old limit); otherwise the
// limit grows by about one per round trip while it is in use.
export default class HalveOnSlow {
  limit = 20;
  maxLimit = 200;
  #fastestMs = Number.POSITIVE_INFINITY;
  #cutAtMs = Number.NEGATIVE_INFINITY;

  update({ startTime, rtt, inflight, dropped }) {
    this.#fastestMs = Math.min(this.#fastestMs, Math.max(rtt, 1));
    if (dropped || rtt > 4 * this.#fastestMs) {
      if (startTime >= this.#cutAtMs) {
        this.limit = Math.max(1, this.limit / 2);
        this.#cutAtMs = startTime + rtt;
      }
    } else if (inflight * 2 >= this.limit) {
      this.limit = Math.min(this.maxLimit, this.limit + 1 / this.limit);
    }
    return this.limit;
  }
}
