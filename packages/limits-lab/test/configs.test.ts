import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AimdLimit, GradientLimit, seededRandom, VegasLimit } from 'limits-core';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/configs/loadConfig.js';
import { parseConfigSpec } from '../src/configs/parseConfigSpec.js';
import { VirtualClock } from '../src/sim/VirtualClock.js';

const env = () => ({ clock: new VirtualClock(), random: seededRandom(1) });

describe('parseConfigSpec', () => {
  it('reads a fixed limit, short or as an option', () => {
    expect(parseConfigSpec('fixed:40').limiter(env())).toEqual({ limit: 40 });
    expect(parseConfigSpec('fixed:limit=40,maxQueued=10').limiter(env())).toEqual({
      limit: 40,
      maxQueued: 10,
    });
    expect(parseConfigSpec('fixed').limiter(env())).toEqual({ limit: 20 });
    expect(parseConfigSpec('fixed:40').name).toBe('fixed:40');
  });

  it('builds each algorithm fresh per run, with its options, and the limiter options beside', () => {
    const config = parseConfigSpec(
      'vegas:maxLimit=200,smoothing=0.5,maxQueued=100,queueOrder=lifo',
    );
    const a = config.limiter(env());
    const b = config.limiter(env());
    expect(a.algorithm).toBeInstanceOf(VegasLimit);
    expect(a.algorithm).not.toBe(b.algorithm);
    expect(a.algorithm?.maxLimit).toBe(200);
    expect(a).toMatchObject({ maxQueued: 100, queueOrder: 'lifo' });
    expect(parseConfigSpec('gradient').limiter(env()).algorithm).toBeInstanceOf(GradientLimit);
    expect(parseConfigSpec('aimd:backoffRatio=0.7').limiter(env()).algorithm).toBeInstanceOf(
      AimdLimit,
    );
  });

  it('sets nested options, turns object options on, takes Infinity and a name', () => {
    const config = parseConfigSpec(
      'shed=vegas:shedding.targetWaitMs=20,shedding.cohorts=8,codel=on,maxQueueWaitMs=Infinity,deadline=true',
    );
    expect(config.name).toBe('shed');
    expect(config.deadlineAdmission).toBe(true);
    expect(config.limiter(env())).toMatchObject({
      shedding: { targetWaitMs: 20, cohorts: 8 },
      codel: {},
      maxQueueWaitMs: Number.POSITIVE_INFINITY,
    });
  });

  it.each([
    [
      'nope',
      /the algorithm of configuration "nope" must be one of "fixed", "vegas", "gradient", "aimd", got "nope"/,
    ],
    ['vegas:maxLimit', /"maxLimit" must be key=value/],
    ['fixed:abc', /"abc" must be key=value \(or the limit, as in fixed:40\)/],
    ['vegas:maxQueued=1,maxQueued=2', /option "maxQueued" is given twice/],
    ['vegas:deadline=5', /"deadline" must be true or false, got 5/],
    ['', /a configuration spec must be a non-empty string/],
  ])('refuses %j', (spec, message) => {
    expect(() => parseConfigSpec(spec)).toThrow(message);
  });

  it("leaves an algorithm's bad option to the algorithm's own check, naming it", () => {
    const config = parseConfigSpec('vegas:maxLimt=5');
    expect(() => config.limiter(env())).toThrow(/unknown option "vegas.maxLimt" for VegasLimit/);
    expect(() => parseConfigSpec('fixed:limit=5,extra=1').limiter(env())).toThrow(
      /unknown option "fixed.extra" for a fixed limit; allowed: limit/,
    );
  });
});

describe('loadConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'limits-lab-configs-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return name;
  };

  it('checks an inline spec by building its limiter once', async () => {
    await expect(loadConfig('vegas:maxLimit=-1', dir)).rejects.toThrow(
      /configuration "vegas:maxLimit=-1": limits: option "vegas.maxLimit" must be a number in \[1, Infinity\), got -1/,
    );
    await expect(loadConfig('fixed:maxQueued=-1', dir)).rejects.toThrow(/option "maxQueued"/);
  });

  it('reads a JSON file of Limiter options, named after the file or in it', async () => {
    const path = file(
      'big.json',
      JSON.stringify({ algorithm: { type: 'vegas', maxLimit: 300 }, maxQueued: 50 }),
    );
    const config = await loadConfig(path, dir);
    expect(config.name).toBe('big');
    const options = config.limiter(env());
    expect(options.algorithm).toBeInstanceOf(VegasLimit);
    expect(options.algorithm?.maxLimit).toBe(300);
    expect(options.maxQueued).toBe(50);
    const named = file(
      'n.json',
      JSON.stringify({ name: 'mine', limit: 5, deadlineAdmission: true }),
    );
    expect(await loadConfig(named, dir)).toMatchObject({ name: 'mine', deadlineAdmission: true });
    expect((await loadConfig(`other=${named}`, dir)).name).toBe('other');
  });

  it('refuses a JSON file with an unknown limiter option or algorithm, or that is not an object', async () => {
    await expect(loadConfig(file('bad1.json', '{"maxQueud": 5}'), dir)).rejects.toThrow(
      /unknown option "maxQueud" for Limiter; did you mean "maxQueued"\?/,
    );
    await expect(
      loadConfig(file('bad2.json', '{"algorithm": {"type": "bbr"}}'), dir),
    ).rejects.toThrow(
      /option "algorithm.type" must be one of "fixed", "vegas", "gradient", "aimd", got "bbr"/,
    );
    await expect(loadConfig(file('bad3.json', '[1]'), dir)).rejects.toThrow(
      /must hold a JSON object, got an array/,
    );
    await expect(loadConfig(file('bad4.json', '{'), dir)).rejects.toThrow(
      /cannot read the configuration file/,
    );
    await expect(loadConfig('missing.json', dir)).rejects.toThrow(
      /cannot read the configuration file missing.json/,
    );
  });

  it('loads a module exporting an algorithm class, a factory or an object', async () => {
    const algorithm = 'limit = 7; update() { return this.limit; }';
    const cls = await loadConfig(file('cls.mjs', `export default class A { ${algorithm} }`), dir);
    const a = cls.limiter(env()).algorithm;
    expect(a?.limit).toBe(7);
    expect(cls.limiter(env()).algorithm).not.toBe(a);
    expect(cls.name).toBe('cls');
    const factory = await loadConfig(
      file(
        'factory.mjs',
        'export const make = ({ random }) => ({ limit: 3, maxQueued: Math.floor(random() * 0) + 4 });',
      ),
      dir,
    );
    expect(factory.limiter(env())).toEqual({ limit: 3, maxQueued: 4 });
    const object = await loadConfig(
      file('object.mjs', 'export default { limit: 9, update() { return 9; } };'),
      dir,
    );
    expect(object.limiter(env()).algorithm?.limit).toBe(9);
  });

  it('refuses a module without a usable export', async () => {
    await expect(
      loadConfig(file('two.mjs', 'export const a = 1; export const b = 2;'), dir),
    ).rejects.toThrow(/must have a default export \(or a single export\).*it exports a, b/);
    await expect(loadConfig(file('num.mjs', 'export default 5;'), dir)).rejects.toThrow(
      /must export a limit algorithm .* got 5/,
    );
    await expect(loadConfig(file('throws.mjs', 'throw new Error("boom");'), dir)).rejects.toThrow(
      /cannot load the configuration module throws.mjs: boom/,
    );
  });
});
