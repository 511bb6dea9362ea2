import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { validationFailed, type ValidationIssue } from './errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Bodies: exact types, no coercion; defaults are filled in. */
const bodyAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true }));
/** Query strings arrive as text, so they are coerced to the schema's types. */
const queryAjv = addFormats(new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: true }));

export type Schema = Record<string, unknown>;
export interface Validator<T> { (value: unknown): T; schema: Schema }

function issuesOf(errors: ErrorObject[] | null | undefined): ValidationIssue[] {
  return (errors ?? []).map((error) => {
    let path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
    let message = error.message ?? 'is invalid';
    if (error.keyword === 'required') {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      path = path ? `${path}.${missing}` : missing;
      message = 'is required';
    } else if (error.keyword === 'additionalProperties') {
      const extra = (error.params as { additionalProperty: string }).additionalProperty;
      path = path ? `${path}.${extra}` : extra;
      message = 'is not an allowed field';
    } else if (error.keyword === 'enum') {
      message = `must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    return { path: path || '(body)', message, keyword: error.keyword };
  });
}

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
      const issues = issuesOf(check.errors);
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
  return build<T>(queryAjv, schema, 'query');
}

export const uuidPattern = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID = new RegExp(uuidPattern);
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
