import type { JsonSchema } from './define.ts';

/** Small schemas the capability declarations share. */
export const id: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };
export const text = (maxLength: number): JsonSchema => ({ type: 'string', maxLength });
export const object: JsonSchema = { type: 'object' };
export const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });
export const anything: JsonSchema = {};
export const nothing: JsonSchema = { type: 'null' };
export const record: JsonSchema = { type: 'object' };
export const changed: JsonSchema = { type: 'object', required: ['changed'], properties: { changed: { type: 'boolean' } } };
