import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { schemaIssuesOf } from '../../sdk/shared/validation-issues.ts';
import { assertFiniteQuery } from './body.ts';
import { validationFailed, type ValidationIssue } from './errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Bodies: exact types, no coercion; defaults are filled in. */
const bodyAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }));
/** Query strings arrive as text, so they are coerced to the schema's types. */
const queryAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }));

export type Schema = Record<string, unknown>;
export interface Validator<T> { (value: unknown): T; schema: Schema }

function describe(where: string, issues: ValidationIssue[]): string {
  const first = issues[0];
  if (!first) return `Invalid ${where}`;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return `Invalid ${where}: ${first.path === '(body)' ? 'body' : first.path} ${first.message}${more}`;
}

function build<T>(ajv: Ajv, schema: Schema, where: string): Validator<T> {
  const check: ValidateFunction = ajv.compile(schema);
  const validator = ((value: unknown) => {
    if (!check(value)) {
      const issues: ValidationIssue[] = schemaIssuesOf(check.errors);
      throw validationFailed(describe(where, issues), issues);
    }
    return value as T;
  }) as Validator<T>;
  validator.schema = schema;
  return validator;
}

/** Compiles a JSON schema for request bodies into a function that returns the typed value or throws 400. */
export function bodyValidator<T>(schema: Schema): Validator<T> {
  return build<T>(bodyAjv, schema, 'request body');
}

export function queryValidator<T>(schema: Schema): Validator<T> {
  const validate = build<T>(queryAjv, schema, 'query');
  const checked = ((value: unknown) => {
    const query = validate(value);
    assertFiniteQuery(query as Record<string, unknown>);
    return query;
  }) as Validator<T>;
  checked.schema = schema;
  return checked;
}

export const uuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID = new RegExp(uuidPattern);
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
