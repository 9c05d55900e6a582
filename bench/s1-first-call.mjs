// Scenario S1's recovery, one figure: how long after the end of the spike the first call that gets
// through to the downstream is sent. With the default queue of 0 the app refuses every /external call
// until then (about 10 per 100 ms), so this wait sets most of the goodput lost after the spike.
//
//   node bench/s1-first-call.mjs                          Vegas, 8 s spike, 12 rounds (~3.5 min)
//   node bench/s1-first-call.mjs --strategy=gradient --spike-s=6 --rounds=12
//
// Each round runs S1's three processes (examples/latency-spike/, scenario.mjs's `runStrategy`) with
// 3 s calm, the spike, 2 s calm, and prints the send time (from the end of the spike) of the first
// /external call answered from the downstream, when its answer came, and the calls refused in the
// first second; then the mean and the sorted values.
import { runStrategy } from '../examples/latency-spike/scenario.mjs';

const args = process.argv.slice(2);
const arg = (name, fallback) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const strategy = arg('strategy', 'vegas');
const spikeS = Number(arg('spike-s', '8'));
const rounds = Number(arg('rounds', '12'));
if (!(spikeS > 0))
  throw new RangeError(`--spike-s must be a positive number of seconds, got ${spikeS}`);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new RangeError(`--rounds must be an integer ≥ 1, got ${rounds}`);

const waits = [];
for (let r = 0; r < rounds; r++) {
  const run = await runStrategy(strategy, { beforeS: 3, spikeS, afterS: 2 });
  const after = run.records.filter((x) => x.route === 'external' && x.at >= run.spikeTo);
  const first = after
    .filter((x) => x.status === 200 && x.source === 'live')
    .sort((a, b) => a.at - b.at)[0];
  const refused = after.filter((x) => x.at < run.spikeTo + 1000 && x.status !== 200).length;
  const wait = first === undefined ? Number.NaN : first.at - run.spikeTo;
  waits.push(wait);
  console.log(
    `round ${r + 1}/${rounds}: first call through sent ${wait.toFixed(0)} ms after the spike, answered at ${first === undefined ? '—' : (first.end - run.spikeTo).toFixed(0)} ms; refused in the first second: ${refused}`,
  );
}
const done = waits.filter((w) => !Number.isNaN(w));
const mean = done.reduce((a, b) => a + b, 0) / Math.max(1, done.length);
console.log(
  `${strategy}, ${spikeS} s spike, ${rounds} rounds: mean ${mean.toFixed(0)} ms; sorted ${done
    .map(Math.round)
    .sort((a, b) => a - b)
    .join(' ')}`,
);
