import { PROTOTYPE_MEMBER_NAMES } from './reserved-keys.ts';

/** Schema pieces the manifest's fragments share. */

/** Keys become property names (handler tables, per-plugin maps): none may name an inherited member. */
export const notPrototypeMember = { not: { enum: PROTOTYPE_MEMBER_NAMES, description: 'it names a member every JavaScript object inherits; choose another name' } } as const;
export const identifier = { type: 'string', pattern: '^[a-z][a-z0-9]*([-_.][a-z0-9]+)*$', maxLength: 64, ...notPrototypeMember } as const;
export const schemaObject = { type: 'object', description: 'A JSON schema (draft 2020-12 subset understood by ajv).' } as const;
