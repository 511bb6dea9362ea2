import type { JsonSchema } from './define.ts';

/** Small schemas the capability declarations share. */
export const id: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };
/** A uuid in the plain form PostgreSQL's uuid type takes. */
export const uuid: JsonSchema = { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' };
export const text = (maxLength: number): JsonSchema => ({ type: 'string', maxLength });
export const object: JsonSchema = { type: 'object' };
export const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: 'null' }] });
export const anything: JsonSchema = {};
export const nothing: JsonSchema = { type: 'null' };
export const record: JsonSchema = { type: 'object' };
export const changed: JsonSchema = { type: 'object', required: ['changed'], properties: { changed: { type: 'boolean' } } };
