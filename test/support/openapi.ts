import { compileErrors, dereference, validate } from '@readme/openapi-parser';
import { expect } from 'vitest';
import type { Api } from './harness.ts';

export const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export interface DocumentOperation {
  method: string;
  path: string;
  operation: any;
}

/** Fetches the instance's OpenAPI document (as a board user or agent: it is not public). */
export async function fetchDocument(api: Api, token?: string): Promise<any> {
  const res = await api.get('/api/openapi.json', { token });
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return res.body;
}

/**
 * Checks a document with @readme/openapi-parser: the OpenAPI 3.1 schema, plus what the schema
 * cannot say (path parameters that match their templates, unique operation ids, references
 * that resolve). Warnings count as failures too.
 */
export async function expectValidDocument(document: unknown): Promise<void> {
  const result = await validate(structuredClone(document) as never);
  expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  expect(result.warnings).toEqual([]);
}

/** The document with every $ref replaced by what it names. */
export async function dereferenced(document: unknown): Promise<any> {
  return dereference(structuredClone(document) as never);
}

export function operationsOf(document: any): DocumentOperation[] {
  const found: DocumentOperation[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const method of HTTP_METHODS) if (item[method]) found.push({ method: method.toUpperCase(), path, operation: item[method] });
  }
  return found;
}

/** A concrete path for a template: every parameter an unknown uuid. */
export function concretePath(template: string): string {
  return template.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
}
