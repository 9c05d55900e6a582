import { createRequire } from 'node:module';
import type { OpossumConstructor } from '../../src/opossum.js';
import { clock } from './timers.js';

const require = createRequire(import.meta.url);
const nodeMajor = Number(process.versions.node.split('.')[0]);

/** opossum 9, the installed peer dependency (the devDependency `opossum`). */
export const opossum9 = require('opossum') as OpossumConstructor;

/**
 * Every supported opossum that runs on this Node, as `[name, CircuitBreaker]` rows for
 * `describe.each`: opossum 9 supports Node 20–24; opossum 10 (the devDependency `opossum10`)
 * declares Node ≥ 22, so it is tested where that holds (CI runs Node 20 and 24).
 */
export const opossumVersions: Array<[string, OpossumConstructor]> = [['opossum 9', opossum9]];
if (nodeMajor >= 22)
  opossumVersions.push(['opossum 10', require('opossum10') as OpossumConstructor]);

/**
 * The options most guard tests start from: opossum 9, the fake-timer clock, no timeout, and an own
 * limiter with a fixed limit of 10.
 */
export const baseOptions = {
  CircuitBreaker: opossum9,
  clock,
  timeoutMs: false as const,
  limiter: { limit: 10, clock },
};
