import pg from 'pg';

/** PostgreSQL's type id of timestamp with time zone. */
const TIMESTAMPTZ = 1184;
const nodePostgresTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => unknown;
/** Where `YYYY-MM-DD HH:MM:SS` has its digits. */
const DIGITS_AT = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];

/**
 * What a Date value becomes once JSON.stringify'd for the isolate: its ISO text, or null for an
 * invalid Date (and for the Infinity node-postgres gives `infinity`). Anything else as it is.
 */
function asJson(value: unknown): unknown {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  return value;
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/**
 * The ISO text of `YYYY-MM-DD HH:MM:SS[.f{1,6}]+00` (what a UTC session prints), made by
 * rearranging characters; null for any other form. Fractions beyond milliseconds are cut, not
 * rounded, as node-postgres's parser does.
 */
function isoOfUtcText(text: string): string | null {
  const end = text.length - 3;
  if (end < 19 || end > 26 || end === 20 || !text.endsWith('+00')) return null;
  for (const at of DIGITS_AT) if (!isDigit(text.charCodeAt(at))) return null;
  if (text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return null;
  let millis = '000';
  if (end > 19) {
    if (text.charCodeAt(19) !== 46) return null;
    for (let at = 20; at < end; at++) if (!isDigit(text.charCodeAt(at))) return null;
    millis = (text.slice(20, Math.min(end, 23)) + '00').slice(0, 3);
  }
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${millis}Z`;
}

/**
 * timestamptz columns of the plugin's own queries, read straight into the text the isolate
 * sees. Rows reach the isolate as JSON, so node-postgres's Date would only be turned back into
 * its ISO text there (the parsing and the formatting were a measurable part of every answer
 * with timestamps). The common form (what a UTC session prints, in years 0001 to 9999) is
 * rearranged as characters; anything else (another offset, BC, a five-digit year, infinity)
 * goes through node-postgres's own parser and then what JSON makes of its result, so the
 * isolate sees exactly what it saw before in every case. timestamp and date columns keep
 * node-postgres's parser: it reads them in the process's local zone, which only ICU could name
 * (several MiB of every worker), and plugins store timestamptz. Host code of the worker reads
 * no date columns of these pools.
 */
export function timestamptzText(text: string): unknown {
  return isoOfUtcText(text) ?? asJson(nodePostgresTimestamptz(text));
}

/** The `types` option of a pg pool whose timestamptz columns arrive as the isolate's JSON text. */
export function isolateJsonTypes(): { getTypeParser(oid: number, format?: string): unknown } {
  return {
    getTypeParser: (oid, format = 'text') => (oid === TIMESTAMPTZ && format === 'text' ? timestamptzText : pg.types.getTypeParser(oid, format as 'text')),
  };
}
