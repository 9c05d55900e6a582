/**
 * One input record's fields (a JSON line's object, a CSV row under its header, a HAR entry's values)
 * read into a {@link TraceRecord}, every field checked: an error names where the record is
 * (`file:line`, or a HAR entry), the field and what was given.
 */
import { CRITICALITIES, parseCriticality } from 'limits-core';
import { formatValue } from 'limits-core/internal';
import {
  outcomeOfStatus,
  TRACE_OUTCOMES,
  type TraceOutcome,
  type TraceRecord,
} from './TraceRecord.js';

/** The fields a trace record is read from, as the input names them (keys in lower case). */
export type RawFields = Readonly<Record<string, unknown>>;

/** The field names an error uses, when the input calls them otherwise (HAR: `startedDateTime`). */
export type FieldNames = Readonly<Record<'start' | 'duration' | 'status', string>>;

const PLAIN_NAMES: FieldNames = { start: 'start', duration: 'duration', status: 'status' };

/** A decimal number, as text (CSV cells, numbers written as strings). */
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/** An ISO 8601 date or date-time (what `Date.parse` reads reliably). */
const ISO_DATE =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

function fieldError(
  Kind: typeof TypeError | typeof RangeError,
  where: string,
  field: string,
  must: string,
  value: unknown,
): Error {
  return new Kind(
    `limits: ${where}: field "${field}" must be ${must}, got ${value === undefined ? 'nothing' : formatValue(value)}`,
  );
}

/** The first of `names` the record has (a field given under either of its names). */
function pick(raw: RawFields, ...names: string[]): unknown {
  for (const name of names) {
    const value = raw[name];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

function numberOf(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && NUMBER.test(value.trim())) return Number(value);
  return Number.NaN;
}

function startOf(raw: RawFields, where: string, field: string): number {
  const value = pick(raw, 'start', 'startms');
  const must = 'a finite number of ms or an ISO 8601 date';
  if (value === undefined) throw fieldError(TypeError, where, field, must, value);
  let ms = numberOf(value);
  if (Number.isNaN(ms) && typeof value === 'string' && ISO_DATE.test(value.trim())) {
    ms = Date.parse(value.trim());
  }
  if (typeof value !== 'number' && typeof value !== 'string') {
    throw fieldError(TypeError, where, field, must, value);
  }
  if (!Number.isFinite(ms)) throw fieldError(RangeError, where, field, must, value);
  return ms;
}

function durationOf(raw: RawFields, where: string, field: string): number {
  const value = pick(raw, 'duration', 'durationms');
  const must = 'a finite number of ms ≥ 0';
  if (typeof value !== 'number' && typeof value !== 'string') {
    throw fieldError(TypeError, where, field, must, value);
  }
  const ms = numberOf(value);
  if (!Number.isFinite(ms) || ms < 0) throw fieldError(RangeError, where, field, must, value);
  return ms;
}

function statusOf(raw: RawFields, where: string, field: string): number | undefined {
  const value = pick(raw, 'status');
  if (value === undefined) return undefined;
  const must = '0 (no answer) or an integer in [100, 599]';
  if (typeof value !== 'number' && typeof value !== 'string') {
    throw fieldError(TypeError, where, field, must, value);
  }
  const status = numberOf(value);
  if (!Number.isInteger(status) || (status !== 0 && (status < 100 || status > 599))) {
    throw fieldError(RangeError, where, field, must, value);
  }
  return status;
}

function outcomeOf(
  raw: RawFields,
  where: string,
  status: number | undefined,
  statusField: string,
): TraceOutcome {
  const value = pick(raw, 'outcome');
  if (value === undefined) {
    if (status !== undefined) return outcomeOfStatus(status);
    throw new TypeError(
      `limits: ${where}: a record needs field "outcome" or "${statusField}", got neither`,
    );
  }
  const must = `one of ${TRACE_OUTCOMES.map((o) => `"${o}"`).join(', ')}`;
  if (typeof value !== 'string') throw fieldError(TypeError, where, 'outcome', must, value);
  const outcome = value.trim().toLowerCase();
  if (!(TRACE_OUTCOMES as readonly string[]).includes(outcome)) {
    throw fieldError(RangeError, where, 'outcome', must, value);
  }
  return outcome as TraceOutcome;
}

/**
 * Reads one record's fields: `start` (or `startMs`), `duration` (or `durationMs`), `outcome` and/or
 * `status` (the outcome wins when both are given), optional `key`, `cost`, `criticality`; other
 * fields are ignored. An empty string counts as absent (an empty CSV cell). The record's `startMs` is
 * as the input gave it (epoch ms for a date), not yet relative to the trace's start.
 * @param where - the record's place for error messages (`trace.csv:12`).
 * @throws TypeError (a field missing or of the wrong type) or RangeError (a value out of range), each
 * naming `where`, the field, what it must be and the value given.
 */
export function readRecordFields(
  raw: RawFields,
  where: string,
  names: FieldNames = PLAIN_NAMES,
): TraceRecord {
  const startMs = startOf(raw, where, names.start);
  const durationMs = durationOf(raw, where, names.duration);
  const status = statusOf(raw, where, names.status);
  const record: TraceRecord = {
    startMs,
    durationMs,
    outcome: outcomeOf(raw, where, status, names.status),
  };
  if (status !== undefined) record.status = status;
  const key = pick(raw, 'key');
  if (key !== undefined) {
    if (typeof key !== 'string' && typeof key !== 'number') {
      throw fieldError(TypeError, where, 'key', 'a string', key);
    }
    record.key = String(key);
  }
  const cost = pick(raw, 'cost');
  if (cost !== undefined) {
    const units = numberOf(cost);
    if (!(Number.isFinite(units) && units > 0)) {
      throw fieldError(
        typeof cost === 'number' || typeof cost === 'string' ? RangeError : TypeError,
        where,
        'cost',
        'a finite number > 0',
        cost,
      );
    }
    record.cost = units;
  }
  const criticality = pick(raw, 'criticality');
  if (criticality !== undefined) {
    const level = parseCriticality(criticality);
    if (level === undefined) {
      throw fieldError(
        typeof criticality === 'string' ? RangeError : TypeError,
        where,
        'criticality',
        `one of ${CRITICALITIES.map((c) => `"${c}"`).join(', ')}`,
        criticality,
      );
    }
    record.criticality = level;
  }
  return record;
}
