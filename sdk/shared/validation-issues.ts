import type { ErrorObject } from 'ajv';

/** One failed check of a schema, worded for people: a dotted path and what is wrong there. */
export interface SchemaIssue { path: string; message: string; keyword: string }

export interface IssueWording {
  /** The path named when the whole value fails (default `(body)`). */
  root?: string;
  /** What an unknown field is called (default `is not an allowed field`). */
  unknownField?: string;
}

/**
 * Ajv's errors as the API words them: dotted paths, a missing or unknown field named in the path,
 * an enum's allowed values spelled out. The kernel's request validation, the command-line
 * client's check of a payload before sending it and the manifest validator all use it, so one
 * input gets one wording wherever it is checked.
 */
export function schemaIssuesOf(errors: readonly ErrorObject[] | null | undefined, wording: IssueWording = {}): SchemaIssue[] {
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
      message = wording.unknownField ?? 'is not an allowed field';
    } else if (error.keyword === 'pattern' && (error.params as { pattern: string }).pattern === '\\S') {
      // The schemas' way of saying "not only whitespace".
      message = 'must not be blank';
    } else if (error.keyword === 'not' && typeof (error.schema as { description?: unknown } | undefined)?.description === 'string' && error.data !== undefined) {
      // A value a schema names as refused (with verbose errors, which carry the schema and the value).
      message = `must not be ${JSON.stringify(error.data)}: ${(error.schema as { description: string }).description}`;
    } else if (error.keyword === 'enum') {
      message = `must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    return { path: path || (wording.root ?? '(body)'), message, keyword: error.keyword };
  });
}
