import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';

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

/** An ajv instance for schemas written by plugins. */
export function pluginSchemaAjv(options: Options = {}): Ajv {
  return addFormats(new Ajv({ strict: false, ...options, code: { ...options.code, regExp: re2Engine as never } }));
}
