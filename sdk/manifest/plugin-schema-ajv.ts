import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import { schemaIssuesOf, type SchemaIssue } from '../shared/validation-issues.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * Regular expressions in plugin-provided schemas (`pattern`, `patternProperties`) run in the
 * kernel process on every request. JavaScript's backtracking engine can be driven into
 * exponential time by a pathological pattern (`^(a+)+$`), so these schemas are compiled with
 * RE2, whose matching time is linear in the input. Patterns RE2 does not support
 * (backreferences, lookaround) fail at manifest validation instead.
 */
const re2Engine = Object.assign((pattern: string, flags = '') => {
  const compiled = RE2JS.compile(pattern);
  // ajv shares compiled patterns within a schema by their toString(): each must print as itself,
  // or every pattern of an instance would be checked with the first one compiled.
  return { test: (text: string) => compiled.test(text), toString: () => `/${pattern}/${flags}` };
}, { code: 'RE2JS.compile' });

/**
 * `format: uuid` is the plain form PostgreSQL's uuid type takes: ajv-formats also accepts a
 * `urn:uuid:` prefix, which a plugin's SQL would then refuse inside its transaction.
 */
const PLAIN_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An ajv instance for schemas written by plugins. */
export function pluginSchemaAjv(options: Options = {}): Ajv {
  return addFormats(new Ajv({ strict: false, ...options, code: { ...options.code, regExp: re2Engine as never } })).addFormat('uuid', PLAIN_UUID);
}

/** Request bodies and service payloads: exact types, defaults filled in. */
export const pluginBodyAjv = pluginSchemaAjv({ allErrors: true, useDefaults: true });
/** Query strings arrive as text: coerced to the schema's types. */
export const pluginQueryAjv = pluginSchemaAjv({ allErrors: true, useDefaults: true, coerceTypes: true });

const compiled = new WeakMap<Ajv, WeakMap<object, ValidateFunction>>();

export type { SchemaIssue };

/** Checks `value` against a plugin-declared schema (compiled once per schema object); answers the issues, empty when it conforms. */
export function schemaIssues(ajv: Ajv, schema: object, value: unknown, root = '(body)'): SchemaIssue[] {
  let byAjv = compiled.get(ajv);
  if (!byAjv) { byAjv = new WeakMap(); compiled.set(ajv, byAjv); }
  let check = byAjv.get(schema);
  if (!check) { check = ajv.compile(schema); byAjv.set(schema, check); }
  if (check(value)) return [];
  return schemaIssuesOf(check.errors, { root });
}

/** "Invalid <where>: <first issue> (and N more)". */
export function describeIssues(where: string, issues: SchemaIssue[]): string {
  return `Invalid ${where}: ${issues[0]!.path} ${issues[0]!.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`;
}
