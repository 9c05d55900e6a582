// Two guard builds (or two cells) timed at the same moments, for a ratio with less noise than
// round-robin: each round starts one child process per side at once, each pinned to a CPU of its
// own (`taskset`) and run with V8's `--single-threaded` (garbage collection and compilation on the
// main thread, so the two sides do not compete for the other CPU), and the CPUs swap every round.
// The shared VM's slow spells then hit both sides alike. Each child is `breaker-overhead.mjs
// --profile=<cell> --seconds=<s>` (5 warm-up batches, then batches for `s` seconds, ns per call).
//
//   node bench/pinned-ab.mjs --a=this --b=/tmp/old/packages/limits-breaker
//   node bench/pinned-ab.mjs --a=this@guard-timeout:burst --b=this@guard:burst --rounds=10
//   node bench/pinned-ab.mjs --a=this --b=this                       an A/A control
//   node bench/pinned-ab.mjs --a=this --b=/tmp/old/packages/limits-breaker --gc
//
// A side is `this` (this checkout's built limits-breaker) or the directory of another build's
// limits-breaker package (see instructions.mjs for building one), optionally `@cell` (a
// breaker-overhead.mjs cell: guard:burst, guard-timeout:seq, …; default --cell, guard-timeout:burst).
// --rounds (default 10), --seconds per child (default 2). With --gc each child also runs with
// `--trace-gc-nvp`, and the report adds, per side, the young-generation collections per 10,000
// calls, their mean time (V8's `scavenge` phase), the bytes that survived each (mean), and
// their time per call.
// Needs Linux, `taskset` (util-linux) and two CPUs. Prints the per-round ns/call of each side, the
// ratios a ÷ b and their median.
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : a.slice(name.length + 3);
};
const rounds = Number(arg('rounds', '10'));
const seconds = Number(arg('seconds', '2'));
const defaultCell = arg('cell', 'guard-timeout:burst');
const gc = process.argv.includes('--gc');
if (!Number.isInteger(rounds) || rounds < 1)
  throw new RangeError(`--rounds must be ≥ 1, got ${rounds}`);
if (!(seconds > 0)) throw new RangeError(`--seconds must be > 0, got ${seconds}`);
if (os.availableParallelism() < 2) throw new Error('pinned-ab.mjs needs two CPUs');

function side(spec, name) {
  if (spec === undefined) throw new Error(`--${name}=this|<limits-breaker dir>[@cell] is required`);
  const [dir, cell = defaultCell] = spec.split('@');
  return { name, spec, dir: dir === 'this' ? undefined : path.resolve(dir), cell };
}
const sides = [side(arg('a'), 'a'), side(arg('b'), 'b')];

/** One child: its ns/call, and with --gc the young-generation collections it reported. */
function run(s, cpu) {
  const cell = s.dir === undefined ? s.cell : `other-${s.cell}`;
  const nodeArgs = ['--single-threaded', ...(gc ? ['--trace-gc-nvp'] : [])];
  const args = ['-c', String(cpu), process.execPath, ...nodeArgs];
  args.push(path.join(here, 'breaker-overhead.mjs'), `--profile=${cell}`, `--seconds=${seconds}`);
  const env = { ...process.env };
  if (s.dir !== undefined) env.LIMITS_BENCH_OTHER_BREAKER = s.dir;
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /: (\d+) calls, ([\d.]+) ns\/call/.exec(out);
      if (code !== 0 || m === null) return reject(new Error(`${s.spec} exited ${code}:\n${out}`));
      const scavenges = [...out.matchAll(/gc=s .*/g)].map((l) => {
        const field = (k) => Number(new RegExp(`\\b${k}=([\\d.]+)`).exec(l[0])?.[1] ?? Number.NaN);
        return { ms: field('scavenge'), survived: field('new_space_survived') };
      });
      resolve({ calls: Number(m[1]), ns: Number(m[2]), scavenges });
    });
  });
}

const results = { a: [], b: [] };
for (let r = 0; r < rounds; r++) {
  const [ca, cb] = r % 2 === 0 ? [0, 1] : [1, 0];
  const [ra, rb] = await Promise.all([run(sides[0], ca), run(sides[1], cb)]);
  results.a.push(ra);
  results.b.push(rb);
  process.stderr.write(`round ${r + 1}/${rounds}: ${ra.ns} / ${rb.ns} ns per call\n`);
}

const ratios = results.a.map((x, i) => x.ns / results.b[i].ns);
const fmt = (xs, d = 0) => xs.map((x) => x.toFixed(d)).join(' ');
console.log('# Pinned A/B (bench/pinned-ab.mjs)\n');
console.log(`- command: \`node bench/pinned-ab.mjs ${process.argv.slice(2).join(' ')}\``);
console.log(
  `- node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'} × ${os.cpus().length}`,
);
for (const s of sides) {
  console.log(`- ${s.name}: ${s.dir ?? "this checkout's limits-breaker"}, cell ${s.cell}`);
  const ns = results[s.name].map((x) => x.ns);
  console.log(`  ns per call, per round: ${fmt(ns, 1)} (median ${median(ns).toFixed(1)})`);
  if (gc) {
    const all = results[s.name];
    const sc = all.flatMap((x) => x.scavenges);
    const calls = all.reduce((t, x) => t + x.calls, 0);
    const pause = sc.reduce((t, x) => t + x.ms, 0);
    const survived = sc.reduce((t, x) => t + x.survived, 0);
    console.log(
      `  young-generation collections: ${((sc.length * 1e4) / calls).toFixed(2)} per 10,000 calls, ` +
        `${(pause / sc.length).toFixed(2)} ms each, ${(survived / sc.length / 1e6).toFixed(2)} MB ` +
        `survived each (mean), ${((pause * 1e6) / calls).toFixed(1)} ns per call`,
    );
  }
}
console.log(`- a ÷ b per round: ${fmt(ratios, 3)}`);
console.log(
  `- **median a ÷ b: ${median(ratios).toFixed(3)}** (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}; a slower in ${ratios.filter((x) => x > 1).length} of ${rounds})`,
);
