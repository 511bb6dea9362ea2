import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isolateJsonTypes, timestamptzText } from '../../kernel/host/worker/capabilities/timestamp-text.ts';

const TIMESTAMPTZ = 1184;
const TIMESTAMP = 1114;
const DATE = 1082;
const TIMESTAMPTZ_ARRAY = 1185;

/** What the isolate saw before: node-postgres's value, through JSON. */
const before = (oid: number, text: string) => JSON.parse(JSON.stringify({ v: pg.types.getTypeParser(oid, 'text')(text) })).v as unknown;

/** Deterministic pseudo-random numbers, so that a failure can be reproduced. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A moment as PostgreSQL prints it (DateStyle ISO): microseconds with trailing zeros cut, none when zero. */
function pgText(epochMicros: number, offsetMinutes: number, withTime = true): string {
  const shifted = new Date(Math.floor(epochMicros / 1000) + offsetMinutes * 60_000);
  const micros = ((epochMicros % 1_000_000) + 1_000_000) % 1_000_000;
  const date = `${pad(shifted.getUTCFullYear(), 4)}-${pad(shifted.getUTCMonth() + 1)}-${pad(shifted.getUTCDate())}`;
  if (!withTime) return date;
  const fraction = micros === 0 ? '' : `.${pad(micros, 6).replace(/0+$/, '')}`;
  return `${date} ${pad(shifted.getUTCHours())}:${pad(shifted.getUTCMinutes())}:${pad(shifted.getUTCSeconds())}${fraction}`;
}

function offsetText(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}${abs % 60 ? `:${pad(abs % 60)}` : ''}`;
}

describe('timestamptz columns read for the isolate', () => {
  const parse = timestamptzText;
  const next = random(20261127);
  const YEAR_1000 = Date.UTC(1000, 0, 1) * 1000;
  const YEAR_9999_END = Date.UTC(9999, 11, 31, 23, 59, 59) * 1000;
  const moment = () => Math.floor(YEAR_1000 + next() * (YEAR_9999_END - YEAR_1000));

  it('give exactly the ISO text of the Date they were, for timestamptz in a UTC session', () => {
    for (let i = 0; i < 20_000; i++) {
      let micros = moment();
      // Zero fractions, whole milliseconds and fractions with trailing zeros come up often in practice.
      if (i % 5 === 0) micros -= micros % 1_000_000;
      else if (i % 5 === 1) micros -= micros % 1000;
      else if (i % 5 === 2) micros -= micros % 10;
      const text = `${pgText(micros, 0)}+00`;
      const got = parse(text);
      expect(got, text).toBe(new Date(text).toISOString());
      expect(got, text).toBe(before(TIMESTAMPTZ, text));
    }
  });

  it('give the same for other offsets, BC, years before 1000 or after 9999 and infinity (node-postgres\'s parser, then JSON)', () => {
    const offsets = [60, -480, 330, 345, -210, 840, -720, 0];
    const texts = [
      'infinity', '-infinity', '0001-01-01 00:00:00+00 BC', '0044-03-15 12:00:00+00 BC', '0050-06-01 10:20:30.5+00', '0999-12-31 23:59:59.999999+00',
      '10000-01-01 00:00:00+00', '294276-12-31 23:59:59.999999+00', '2026-11-27 03:27:23+00:53:28', '2026-11-27 03:27:23.123456-00:25:21',
      '2026-11-27 03:27:23Z', 'not a date', '2026-11-27T03:27:23+00', '2026-11-27 03:27:23.1234567+00', '2026-11-27 03:27:23.+00',
    ];
    for (const text of texts) expect(parse(text), text).toEqual(before(TIMESTAMPTZ, text));
    for (let i = 0; i < 5000; i++) {
      const offset = offsets[i % offsets.length]!;
      const text = `${pgText(moment(), offset)}${offsetText(offset)}`;
      const got = parse(text);
      expect(got, text).toBe(before(TIMESTAMPTZ, text));
      expect(got, text).toBe(new Date(text).toISOString());
    }
  });

  it('are the only columns read differently: timestamp, date, arrays and binary keep node-postgres\'s parsers', () => {
    const types = isolateJsonTypes();
    expect(types.getTypeParser(TIMESTAMPTZ)).toBe(timestamptzText);
    expect(types.getTypeParser(TIMESTAMPTZ, 'text')).toBe(timestamptzText);
    for (const oid of [TIMESTAMP, DATE, TIMESTAMPTZ_ARRAY, 25, 3802]) expect(types.getTypeParser(oid, 'text')).toBe(pg.types.getTypeParser(oid, 'text'));
    expect(types.getTypeParser(TIMESTAMPTZ, 'binary')).toBe(pg.types.getTypeParser(TIMESTAMPTZ, 'binary'));
  });
});
