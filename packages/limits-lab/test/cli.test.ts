import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { bin, build, cli } from './support/cli.js';

const S1 = 'examples/latency-spike/s1.lab.json';
const tmp = mkdtempSync(join(tmpdir(), 'limits-lab-cli-'));

/** A small model: 2 s at 200/s, a downstream of 20 ms with a knee at 5, a 500 ms spike. */
const small = join(tmp, 'small.lab.json');
writeFileSync(
  small,
  JSON.stringify({
    name: 'small',
    durationMs: 4_000,
    arrivals: { pattern: 'poisson', ratePerS: 200 },
    downstream: {
      baseMs: 20,
      knee: 5,
      growth: 1,
      jitter: { kind: 'lognormal', sigma: 0.2 },
      spikes: [{ fromMs: 1_500, toMs: 2_000, latencyFactor: 10 }],
    },
  }),
);

describe('limits-lab, in process', () => {
  it('prints the usage on --help', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^limits-lab: compare limiter configurations/);
    expect(r.stdout).toContain('limits-lab model <model.json> --config <spec>');
  });

  it.each([
    [[], /a command is required: model or replay/],
    [['simulate', S1], /unknown command "simulate"; commands: model, replay/],
    [['model', S1, '--config', 'vegas', '--bogus'], /Unknown option '--bogus'/],
    [['model', S1, '--config', 'vegas', '--spike', '1-2'], /"model" takes no --spike/],
    [['model', '--config', 'vegas'], /"model" needs a model file/],
    [['model', S1], /give at least one --config \(or --tune\)/],
    [['model', S1, '--config', 'bbr'], /the algorithm of configuration "bbr" must be one of/],
    [
      ['model', S1, '--config', 'vegas:maxLimit=0'],
      /option "vegas.maxLimit" must be a number in \[1, Infinity\), got 0/,
    ],
    [
      ['model', S1, '--config', 'vegas', '--config', 'vegas'],
      /two configurations are named "vegas"/,
    ],
    [['model', S1, '--config', 'vegas', '--seed', '1.5'], /--seed must be an integer/],
    [
      ['model', S1, '--config', 'vegas', '--objective', 'max goodput'],
      /--objective and --trials go with --tune/,
    ],
    [['model', 'missing.json', '--config', 'vegas'], /cannot read the model file .*missing.json/],
    [['model', S1, '--config', 'vegas', 'extra'], /unexpected argument "extra"/],
    [
      ['replay', 't.jsonl', '--config', 'vegas', '--open-loop', '--closed-loop', '2'],
      /give --open-loop or --closed-loop, not both/,
    ],
    [
      ['replay', 't.jsonl', '--config', 'vegas', '--spike', '5-1'],
      /--spike must be FROM-TO in ms with FROM < TO/,
    ],
    [
      ['replay', 't.jsonl', '--config', 'vegas', '--format', 'xml'],
      /--format must be jsonl, csv or har, got "xml"/,
    ],
    [
      ['replay', 't.jsonl', '--config', 'vegas', '--think-ms', '5'],
      /--think-ms goes with --closed-loop/,
    ],
  ])('refuses %j with exit code 2 and a clear message', async (args, message) => {
    const r = await cli(args);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });

  it('refuses a model file with a bad field, naming the file and the field', async () => {
    const bad = join(tmp, 'bad.lab.json');
    writeFileSync(
      bad,
      JSON.stringify({
        durationMs: 1000,
        arrivals: { pattern: 'constant', ratePerS: 1 },
        downstream: { baseMs: 'NaN' },
      }),
    );
    const r = await cli(['model', bad, '--config', 'vegas']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /bad.lab.json: limits: option "downstream.baseMs" must be a number in \[0, 3600000\], got "NaN"/,
    );
  });

  it('prints one row per configuration, and the same figures as JSON', async () => {
    const table = await cli([
      'model',
      small,
      '--config',
      'fixed:5',
      '--config',
      'q=vegas:maxQueued=50',
    ]);
    expect(table.code).toBe(0);
    const lines = table.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^small: open loop, \d+ requests over 4\.0 s, seed 1; spikes 1500-2000 ms$/,
    );
    expect(lines[2]).toMatch(
      /^config +goodput\/s +in budget\/s +p50 ms +p99 ms +refused +wasted +peak in flight +mean in flight +recovery$/,
    );
    expect(lines[4]).toMatch(/^fixed:5 /);
    expect(lines[5]).toMatch(/^q /);
    const json = await cli([
      'model',
      small,
      '--config',
      'fixed:5',
      '--config',
      'q=vegas:maxQueued=50',
      '--json',
    ]);
    const body = JSON.parse(json.stdout);
    expect(body).toMatchObject({ title: 'small', seed: 1, loop: 'open loop' });
    expect(body.results.map((r: { name: string }) => r.name)).toEqual(['fixed:5', 'q']);
    const fixed = body.results[0];
    // A fixed limit of 5 never has more than 5 calls on the downstream.
    expect(fixed.inflight.peak).toBe(5);
    expect(lines[4]).toContain(fixed.goodputPerS.toFixed(1));
    expect(fixed.spikes).toHaveLength(1);
  });

  it('writes an HTML report with a timeline per configuration, or one SVG', async () => {
    const html = join(tmp, 'r.html');
    expect(
      (await cli(['model', small, '--config', 'fixed:5', '--config', 'vegas', '--out', html])).code,
    ).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page).toMatch(/^<!doctype html>/);
    expect(page.match(/<svg /g)).toHaveLength(2);
    expect(page).toContain('<td>fixed:5</td>');
    const svg = join(tmp, 'r.svg');
    expect((await cli(['model', small, '--config', 'vegas', '--out', svg])).code).toBe(0);
    expect(readFileSync(svg, 'utf8')).toMatch(/^<svg /);
  });

  it('tunes over a grid, prints the Pareto front and a command that reproduces the best', async () => {
    const r = await cli([
      'model',
      small,
      '--tune',
      'vegas:maxLimit=5|10|40,maxQueued=0|20',
      '--objective',
      'max goodput, p99<=400',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^tune: grid, 6 candidates, \d+ meet "max goodput, p99<=400"/);
    expect(r.stdout).toContain('Pareto front (goodput against p99):');
    const best = /^best: limits-lab model (\S+) --seed 1 --config (\S+)$/m.exec(r.stdout);
    expect(best).not.toBeNull();
    const spec = best?.[2] as string;
    // The front's first row is the best, and rerunning its command gives the same figures.
    const frontRow = r.stdout.split('\n').find((l) => l.startsWith(`${spec} `)) as string;
    const rerun = await cli(['model', small, '--seed', '1', '--config', spec]);
    const row = rerun.stdout.split('\n')[4] as string;
    expect(row.slice(spec.length).trim()).toBe(frontRow.slice(spec.length).trim());
  });

  it('tunes with a random search and says when no candidate meets the objective', async () => {
    const r = await cli([
      'model',
      small,
      '--tune',
      'aimd:maxLimit=5..50',
      '--trials',
      '3',
      '--objective',
      'min p99, goodput>100000',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body.tune).toMatchObject({ mode: 'random', candidates: 3, best: null, command: null });
    const text = await cli([
      'model',
      small,
      '--tune',
      'aimd:maxLimit=5..50',
      '--trials',
      '3',
      '--objective',
      'min p99, goodput>100000',
    ]);
    expect(text.stdout).toContain('no candidate meets the objective');
  });

  it('refuses a bad tune space or objective', async () => {
    expect((await cli(['model', small, '--tune', 'vegas:maxLimit=9..3'])).stderr).toMatch(
      /must have lo < hi/,
    );
    expect(
      (await cli(['model', small, '--tune', 'vegas', '--objective', 'max speed'])).stderr,
    ).toMatch(
      /unknown metric "speed"; metrics: goodput, inbudget, p50, p99, refused, wasted, peak, recovery/,
    );
    expect((await cli(['model', small, '--tune', 'vegas', '--trials', '0'])).code).toBe(2);
  });
});

describe('limits-lab, the built executable', () => {
  beforeAll(build);

  it('prints byte-identical output and report for the same seed, and different ones for another', () => {
    const run = (seed: string, out: string) =>
      bin([
        'model',
        S1,
        '--config',
        'fixed:40',
        '--config',
        'vegas',
        '--config',
        'gradient',
        '--seed',
        seed,
        '--out',
        out,
      ]);
    const a = run('7', join(tmp, 'a.html'));
    const b = run('7', join(tmp, 'b.html'));
    const c = run('8', join(tmp, 'c.html'));
    expect(a.code).toBe(0);
    expect(a.stderr).toBe('');
    expect(b.stdout).toBe(a.stdout);
    expect(readFileSync(join(tmp, 'b.html'))).toEqual(readFileSync(join(tmp, 'a.html')));
    expect(c.stdout).not.toBe(a.stdout);
    expect(readFileSync(join(tmp, 'c.html'))).not.toEqual(readFileSync(join(tmp, 'a.html')));
    const json = (seed: string) =>
      bin(['model', S1, '--config', 'vegas', '--seed', seed, '--json']).stdout;
    expect(json('7')).toBe(json('7'));
  });

  it('runs the custom algorithm module of examples/custom-algorithm in one command', () => {
    const r = bin([
      'model',
      S1,
      '--config',
      'fixed:50',
      '--config',
      'examples/custom-algorithm/halve-on-slow.mjs',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^halve-on-slow +\d+\.\d/m);
  });

  it('exits with code 2 and the message on a bad flag', () => {
    const r = bin(['model', S1, '--config', 'vegas', '--seeds', '3']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--seeds'/);
  });
});
