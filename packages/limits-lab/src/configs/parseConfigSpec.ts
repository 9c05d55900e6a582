import type { LimiterOptions } from 'limits-core';
import { formatValue } from 'limits-core/internal';
import { algorithmOptions, checkAlgorithmName } from './algorithms.js';
import type { LabConfig } from './LabConfig.js';

/**
 * The limiter options an inline spec may set beside the algorithm's (a dotted key sets a nested
 * option: `shedding.targetWaitMs=20`; `shedding=on` turns an object option on with its defaults).
 */
export const LIMITER_KEYS = [
  'probeSlots',
  'maxQueued',
  'maxQueueWaitMs',
  'queueOrder',
  'standingQueueMs',
  'codel',
  'stallThresholdMs',
  'sampleEvery',
  'initialServiceMs',
  'fairness',
  'priority',
  'shedding',
] as const;

/** Spec keys of the lab itself (not the limiter's): `deadline=true` turns on deadline admission. */
const LAB_KEYS = ['deadline'] as const;

/**
 * Parses an inline configuration spec: `[name=]algorithm[:key=value,...]`.
 *
 * - `algorithm` is `fixed`, `vegas`, `gradient` or `aimd`; `fixed:40` is short for `fixed:limit=40`.
 * - Each `key=value` is an option of the algorithm (`vegas:maxLimit=200,smoothing=0.5`), or of the
 *   limiter ({@link LIMITER_KEYS}: `maxQueued=100`, `maxQueueWaitMs=500`, `queueOrder=lifo`,
 *   `shedding.targetWaitMs=20`, `codel=on`), or `deadline=true` (acquire with each request's budget
 *   as `timeoutMs`). Values are numbers, `true`/`false`, `Infinity`, `on` (an object option with its
 *   defaults) or words.
 * - `name=` before the algorithm names the configuration in tables (default: the spec itself).
 *
 * @throws TypeError/RangeError naming the spec and what is wrong (unknown algorithm, a pair without
 *   `=`, a repeated key); an option's own check names the option and its range.
 * @example
 * ```ts
 * const config = parseConfigSpec('big=vegas:maxLimit=200,maxQueued=50');
 * config.name; // 'big'
 * ```
 */
export function parseConfigSpec(spec: string): LabConfig {
  if (typeof spec !== 'string' || spec.trim() === '') {
    throw new TypeError(
      `limits-lab: a configuration spec must be a non-empty string, got ${formatValue(spec)}`,
    );
  }
  let rest = spec.trim();
  let name: string | undefined;
  const named = /^([\w.-]+)=(?=[^:]*(?::|$))/.exec(rest);
  const colon = rest.indexOf(':');
  if (named !== null && (colon === -1 || named[0].length <= colon)) {
    name = named[1];
    rest = rest.slice(named[0].length);
  }
  const [head, ...tail] = rest.split(':');
  const algorithm = checkAlgorithmName(`the algorithm of configuration "${spec}"`, head);
  const pairs = tail.join(':');
  const algo: Record<string, unknown> = {};
  const limiter: Record<string, unknown> = {};
  let deadline = false;
  if (pairs !== '') {
    for (const pair of pairs.split(',')) {
      const eq = pair.indexOf('=');
      if (eq === -1) {
        if (algorithm === 'fixed' && Object.keys(algo).length === 0 && /^\d+$/.test(pair)) {
          algo.limit = Number(pair);
          continue;
        }
        throw new TypeError(
          `limits-lab: configuration "${spec}": "${pair}" must be key=value${algorithm === 'fixed' ? ' (or the limit, as in fixed:40)' : ''}`,
        );
      }
      const key = pair.slice(0, eq).trim();
      const value = parseValue(pair.slice(eq + 1).trim());
      const top = key.split('.')[0] as string;
      if ((LAB_KEYS as readonly string[]).includes(key)) {
        if (typeof value !== 'boolean') {
          throw new TypeError(
            `limits-lab: configuration "${spec}": "deadline" must be true or false, got ${formatValue(value)}`,
          );
        }
        deadline = value;
      } else if ((LIMITER_KEYS as readonly string[]).includes(top)) {
        setPath(spec, limiter, key, value);
      } else {
        setPath(spec, algo, key, value);
      }
    }
  }
  return {
    name: name ?? rest,
    spec,
    deadlineAdmission: deadline,
    limiter: (env) => ({
      ...(limiter as LimiterOptions),
      ...algorithmOptions(algorithm, algo, env),
    }),
  };
}

/** A spec value: a number, a boolean, `on` (an object option's defaults: `{}`), or the word itself. */
function parseValue(text: string): unknown {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (text === 'on') return {};
  if (text === 'Infinity') return Number.POSITIVE_INFINITY;
  if (text !== '' && Number.isFinite(Number(text))) return Number(text);
  return text;
}

function setPath(spec: string, target: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part] ?? {};
    if (typeof next !== 'object' || next === null) {
      throw new TypeError(
        `limits-lab: configuration "${spec}": "${key}" sets inside "${part}", which is not an object`,
      );
    }
    node[part] = next;
    node = next as Record<string, unknown>;
  }
  const leaf = parts[parts.length - 1] as string;
  if (leaf === '' || leaf in node) {
    throw new TypeError(
      `limits-lab: configuration "${spec}": option "${key}" is ${leaf === '' ? 'empty' : 'given twice'}`,
    );
  }
  node[leaf] = value;
}
