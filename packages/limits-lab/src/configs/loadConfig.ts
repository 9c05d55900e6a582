import { readFile } from 'node:fs/promises';
import { basename, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Limiter, type LimiterOptions, seededRandom } from 'limits-core';
import { checkBoolean, checkString, formatValue } from 'limits-core/internal';
import type { LimiterEnv } from '../sim/simulate.js';
import { VirtualClock } from '../sim/VirtualClock.js';
import { algorithmOptions, checkAlgorithmName, isAlgorithm } from './algorithms.js';
import type { LabConfig } from './LabConfig.js';
import { parseConfigSpec } from './parseConfigSpec.js';

/**
 * Reads a configuration: an inline spec ({@link parseConfigSpec}), a JSON file of limiter options
 * (`*.json`), or a JS module exporting a limit algorithm (`*.js`, `*.mjs`). A file may be named like
 * a spec: `name=path`. Every configuration is built once here on a virtual clock, so a bad option
 * fails now, naming it, rather than in the middle of a run.
 *
 * A JSON file holds `Limiter` options, its `algorithm` an object with a `type` (`fixed`, `vegas`,
 * `gradient`, `aimd`) and that algorithm's options (`fixed` takes `limit`), plus optional `name` and
 * `deadlineAdmission`: `{"algorithm": {"type": "vegas", "maxLimit": 200}, "maxQueued": 100}`.
 *
 * A module's default export (or else its only export) is one of: a class of limit algorithm
 * (constructed with no argument, once per run); a factory function, called once per run with
 * `{ clock, random }`, returning a limit algorithm or `Limiter` options; or an algorithm object
 * (`{ limit, update(sample) }`), used as it is — its state then carries from one run to the next.
 *
 * @param cwd - the folder relative paths start from (default: the process's).
 * @throws Error naming the file or spec when it cannot be read or holds no configuration; the
 *   limiter's or the algorithm's own TypeError/RangeError for a bad option.
 */
export async function loadConfig(spec: string, cwd: string = process.cwd()): Promise<LabConfig> {
  const named = /^([\w.-]+)=(.*\.(?:json|js|mjs|cjs))$/.exec(spec);
  const path = named === null ? spec : (named[2] as string);
  const ext = extname(path);
  let config: LabConfig;
  if (ext === '.json') config = await jsonConfig(spec, resolve(cwd, path));
  else if (ext === '.js' || ext === '.mjs' || ext === '.cjs') {
    config = await moduleConfig(spec, resolve(cwd, path));
  } else config = parseConfigSpec(spec);
  if (named !== null) config.name = named[1] as string;
  else if (ext !== '' && config.name === spec) config.name = basename(path, ext);
  tryBuild(config);
  return config;
}

/** Builds the configuration's limiter once, on a throwaway virtual clock. */
function tryBuild(config: LabConfig): void {
  const clock = new VirtualClock();
  try {
    new Limiter({ ...config.limiter({ clock, random: seededRandom(0) }), clock });
  } catch (error) {
    const e = error as Error;
    e.message = `configuration "${config.spec}": ${e.message}`;
    throw e;
  }
}

async function jsonConfig(spec: string, file: string): Promise<LabConfig> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new Error(
      `limits-lab: cannot read the configuration file ${spec}: ${(error as Error).message}`,
    );
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new TypeError(
      `limits-lab: the configuration file ${spec} must hold a JSON object, got ${formatValue(json)}`,
    );
  }
  const { name, deadlineAdmission, algorithm, ...limiter } = json as Record<string, unknown>;
  let algo:
    | { type: ReturnType<typeof checkAlgorithmName>; options: Record<string, unknown> }
    | undefined;
  if (algorithm !== undefined) {
    if (algorithm === null || typeof algorithm !== 'object' || Array.isArray(algorithm)) {
      throw new TypeError(
        `limits: option "algorithm" must be an object with a "type", got ${formatValue(algorithm)}`,
      );
    }
    const { type, ...options } = algorithm as Record<string, unknown>;
    algo = { type: checkAlgorithmName('option "algorithm.type"', type), options };
  }
  return {
    name: checkString('name', name) ?? spec,
    spec,
    deadlineAdmission: checkBoolean('deadlineAdmission', deadlineAdmission, false),
    limiter: (env) => ({
      ...(structuredClone(limiter) as LimiterOptions),
      ...(algo === undefined ? {} : algorithmOptions(algo.type, algo.options, env)),
    }),
  };
}

async function moduleConfig(spec: string, file: string): Promise<LabConfig> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(
      `limits-lab: cannot load the configuration module ${spec}: ${(error as Error).message}`,
    );
  }
  const names = Object.keys(mod).filter((k) => k !== 'default');
  const exported = mod.default ?? (names.length === 1 ? mod[names[0] as string] : undefined);
  if (exported === undefined) {
    throw new TypeError(
      `limits-lab: the configuration module ${spec} must have a default export (or a single export): a limit algorithm, its class, or a factory; it exports ${names.length === 0 ? 'nothing' : names.join(', ')}`,
    );
  }
  const build = (env: LimiterEnv): LimiterOptions => {
    let made: unknown = exported;
    if (typeof exported === 'function') {
      made = isClass(exported)
        ? new (exported as new () => unknown)()
        : (exported as (env: LimiterEnv) => unknown)(env);
    }
    if (isAlgorithm(made)) return { algorithm: made };
    if (made !== null && typeof made === 'object' && !Array.isArray(made))
      return made as LimiterOptions;
    throw new TypeError(
      `limits-lab: the configuration module ${spec} must export a limit algorithm ({ limit, update(sample) }), its class, or a factory returning one or Limiter options; got ${formatValue(made)}`,
    );
  };
  return { name: spec, spec, deadlineAdmission: false, limiter: build };
}

function isClass(fn: unknown): boolean {
  return /^class[\s{]/.test(Function.prototype.toString.call(fn));
}
