import { writeFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { LabConfig } from '../configs/LabConfig.js';
import { loadConfig } from '../configs/loadConfig.js';
import { loadModel } from '../model/loadModel.js';
import { ModelDownstream } from '../model/ModelDownstream.js';
import { modelArrivals } from '../model/modelArrivals.js';
import { renderTimelineSvg } from '../renderTimelineSvg.js';
import { formatTable } from '../report/formatTable.js';
import type { RunInfo } from '../report/RunInfo.js';
import { renderHtmlReport } from '../report/renderHtmlReport.js';
import { reportJson } from '../report/reportJson.js';
import { type CompareRun, compare } from '../sim/compare.js';
import type { Spike } from '../sim/GoodputBins.js';
import type { SimResult } from '../sim/SimResult.js';
import { arrivalsOf, fitDownstream, readTrace } from '../trace/index.js';
import type { Arrival } from '../traffic.js';
import { formatTune, shellQuote } from '../tune/formatTune.js';
import { tune } from '../tune/tune.js';
import { USAGE } from './usage.js';

/** Where the CLI writes, and the folder its relative paths start from. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  cwd: string;
}

/** A mistake in the command line or its input files: exit code 2. */
class UsageError extends Error {}

const FLAGS = {
  config: { type: 'string', multiple: true },
  seed: { type: 'string' },
  json: { type: 'boolean' },
  out: { type: 'string' },
  tune: { type: 'string' },
  objective: { type: 'string' },
  trials: { type: 'string' },
  format: { type: 'string' },
  'open-loop': { type: 'boolean' },
  'closed-loop': { type: 'string' },
  'think-ms': { type: 'string' },
  spike: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Flags each command takes (every other one is refused). */
const COMMAND_FLAGS: Record<string, readonly string[]> = {
  model: ['config', 'seed', 'json', 'out', 'tune', 'objective', 'trials'],
  replay: [
    'config',
    'seed',
    'json',
    'out',
    'tune',
    'objective',
    'trials',
    'format',
    'open-loop',
    'closed-loop',
    'think-ms',
    'spike',
  ],
};

/**
 * The `limits-lab` command: runs it on `argv` (the arguments after the program) and resolves with
 * its exit code — 0 done, 1 a run failed, 2 a bad command, flag, configuration or input file (a
 * message on `stderr`, and the usage for a bad command or flag).
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (error) {
    const e = error as Error;
    if (error instanceof UsageError) {
      io.stderr(`limits-lab: ${e.message}\nRun "limits-lab --help" for the usage.\n`);
      return 2;
    }
    io.stderr(`limits-lab: ${e.message.replace(/^limits(-lab)?: /, '')}\n`);
    return e instanceof TypeError ||
      e instanceof RangeError ||
      e instanceof SyntaxError ||
      (e as { input?: boolean }).input === true
      ? 2
      : 1;
  }
}

async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof FLAGS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: FLAGS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional.*$/s, ''));
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.stdout(USAGE);
    return 0;
  }
  const [command, input, ...extra] = positionals;
  if (command === undefined) throw new UsageError('a command is required: model or replay');
  const allowed = COMMAND_FLAGS[command];
  if (allowed === undefined) {
    throw new UsageError(`unknown command "${command}"; commands: model, replay`);
  }
  for (const flag of Object.keys(values)) {
    if (!allowed.includes(flag)) throw new UsageError(`"${command}" takes no --${flag}`);
  }
  if (input === undefined) {
    throw new UsageError(
      `"${command}" needs ${command === 'model' ? 'a model file' : 'a trace file'}`,
    );
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const configSpecs = values.config ?? [];
  if (configSpecs.length === 0 && values.tune === undefined) {
    throw new UsageError('give at least one --config (or --tune)');
  }
  if (
    (values.objective !== undefined || values.trials !== undefined) &&
    values.tune === undefined
  ) {
    throw new UsageError('--objective and --trials go with --tune');
  }
  const seed = integer('--seed', values.seed, 1, -(2 ** 31), 2 ** 32 - 1);
  const trials =
    values.trials === undefined ? undefined : integer('--trials', values.trials, 0, 1, 100_000);
  const configs: LabConfig[] = [];
  for (const spec of configSpecs) {
    try {
      configs.push(await loadConfig(spec, io.cwd));
    } catch (error) {
      throw new UsageError((error as Error).message.replace(/^limits(-lab)?: /, ''));
    }
  }
  const names = new Set<string>();
  for (const c of configs) {
    if (names.has(c.name))
      throw new UsageError(`two configurations are named "${c.name}": name them (name=spec)`);
    names.add(c.name);
  }

  let runOptions: CompareRun;
  let info: RunInfo;
  let preface = '';
  let command_ = `limits-lab ${command} ${shellQuote(input)}`;
  if (command === 'model') {
    const model = await inputFile(() => loadModel(resolve(io.cwd, input)));
    const downstream = new ModelDownstream(model.downstream);
    runOptions = {
      downstream,
      arrivals: modelArrivals(model, seed),
      seed,
      durationMs: model.durationMs,
      spikes: downstream.spikes,
      timeline: { bucketMs: Math.max(100, Math.ceil(model.durationMs / 2_000 / 100) * 100) },
    };
    info = { title: model.name, seed, loop: 'open loop' };
  } else {
    const replay = await replayRun(input, values, io.cwd, seed);
    runOptions = replay.run;
    info = { title: basename(input), seed, loop: replay.loop };
    preface = replay.fitReport;
    command_ += replay.flags;
  }
  command_ += ` --seed ${seed}`;

  const results: SimResult[] = compare(configs, runOptions);
  const tuned =
    values.tune === undefined
      ? undefined
      : tune({ space: values.tune, objective: values.objective, trials, run: runOptions });
  if (values.json === true) {
    const body = JSON.parse(reportJson(results, info)) as Record<string, unknown>;
    if (tuned !== undefined) {
      body.tune = {
        objective: tuned.objective.text,
        mode: tuned.mode,
        candidates: tuned.trials.length,
        front: tuned.front.map((t) => t.spec),
        best: tuned.best?.spec ?? null,
        command:
          tuned.best === undefined ? null : `${command_} --config ${shellQuote(tuned.best.spec)}`,
      };
    }
    io.stdout(`${JSON.stringify(body, null, 2)}\n`);
  } else {
    if (preface !== '') io.stdout(`${preface.trimEnd()}\n\n`);
    if (results.length > 0) io.stdout(formatTable(results, info));
    if (tuned !== undefined)
      io.stdout(`${results.length > 0 ? '\n' : ''}${formatTune(tuned, command_)}`);
  }
  if (values.out !== undefined) {
    const shown = [...results];
    if (tuned?.best !== undefined) {
      // The best candidate, rerun with its timeline for the report.
      const best = compare(
        [
          {
            name: `best: ${tuned.best.spec}`,
            limiter: (await loadConfig(tuned.best.spec)).limiter,
          },
        ],
        runOptions,
      );
      shown.push(...best);
    }
    const out = resolve(io.cwd, values.out);
    const text = out.endsWith('.svg')
      ? renderTimelineSvg(
          shown
            .filter((r) => r.timeline !== undefined)
            .map((r) => ({
              name: r.name,
              timeline: r.timeline as NonNullable<SimResult['timeline']>,
            })),
          { title: info.title },
        )
      : renderHtmlReport(shown, info);
    await writeFile(out, text);
  }
  return 0;
}

/** Runs `read`, reporting its failure as a bad input file (exit code 2). */
async function inputFile<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^limits(-lab)?: /, ''));
  }
}

function integer(
  flag: string,
  text: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^-?\d+$/.test(text) || n < min || n > max) {
    throw new UsageError(`${flag} must be an integer in [${min}, ${max}], got "${text}"`);
  }
  return n;
}

function parseSpike(text: string): Spike {
  const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(text);
  const fromMs = Number(m?.[1]);
  const toMs = Number(m?.[2]);
  if (m === null || !(toMs > fromMs)) {
    throw new UsageError(
      `--spike must be FROM-TO in ms with FROM < TO, e.g. 5000-13000, got "${text}"`,
    );
  }
  return { fromMs, toMs };
}

interface ReplayValues {
  format?: string | undefined;
  'open-loop'?: boolean | undefined;
  'closed-loop'?: string | undefined;
  'think-ms'?: string | undefined;
  spike?: string[] | undefined;
}

/** A replay's run: the trace's requests, the downstream fitted to them, and how they are sent. */
async function replayRun(
  input: string,
  values: ReplayValues,
  cwd: string,
  seed: number,
): Promise<{ run: CompareRun; loop: string; fitReport: string; flags: string }> {
  const format = values.format;
  if (format !== undefined && format !== 'jsonl' && format !== 'csv' && format !== 'har') {
    throw new UsageError(`--format must be jsonl, csv or har, got "${format}"`);
  }
  if (values['open-loop'] === true && values['closed-loop'] !== undefined) {
    throw new UsageError('give --open-loop or --closed-loop, not both');
  }
  const clients =
    values['closed-loop'] === undefined
      ? undefined
      : integer('--closed-loop', values['closed-loop'], 1, 1, 1_000_000);
  const thinkMs = values['think-ms'] === undefined ? undefined : Number(values['think-ms']);
  if (thinkMs !== undefined && (clients === undefined || !(thinkMs >= 0) || thinkMs === Infinity)) {
    throw new UsageError(
      clients === undefined
        ? '--think-ms goes with --closed-loop'
        : `--think-ms must be a number ≥ 0, got "${values['think-ms']}"`,
    );
  }
  const spikes = (values.spike ?? []).map(parseSpike);
  const records = await inputFile(async () => {
    const all = [];
    for await (const record of readTrace(
      resolve(cwd, input),
      format === undefined ? undefined : { format },
    ))
      all.push(record);
    return all;
  });
  const { downstream, report } = fitDownstream(records);
  const arrivals: Arrival[] = records.map(arrivalsOf);
  arrivals.sort((a, b) => a.atMs - b.atMs);
  let flags = format === undefined ? '' : ` --format ${format}`;
  if (clients !== undefined)
    flags += ` --closed-loop ${clients}${thinkMs === undefined ? '' : ` --think-ms ${thinkMs}`}`;
  for (const s of spikes) flags += ` --spike ${s.fromMs}-${s.toMs}`;
  const last = arrivals[arrivals.length - 1]?.atMs ?? 0;
  return {
    run: {
      downstream,
      arrivals,
      seed,
      spikes,
      ...(clients === undefined ? {} : { closedLoop: { clients, thinkMs: thinkMs ?? 0 } }),
      timeline: { bucketMs: Math.max(100, Math.ceil(last / 2_000 / 100) * 100) },
    },
    loop: clients === undefined ? 'open loop' : `closed loop, ${clients} clients`,
    fitReport: report,
    flags,
  };
}
