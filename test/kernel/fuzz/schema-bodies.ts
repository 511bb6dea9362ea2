import type { Random } from './random.ts';
import type { FuzzBody } from './bodies.ts';

/**
 * Bodies for plugin routes, which declare their body schema in plugin.json: a body that
 * passes the schema except for exactly one thing the schema (or the kernel, for the agent
 * field and for unstorable text) must refuse. The request goes to a valid path with valid
 * credentials, so validation itself, not a 404 earlier on, is what is tried.
 */
type Schema = {
  type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; additionalProperties?: boolean | Schema;
  enum?: unknown[]; const?: unknown; format?: string; pattern?: string; minLength?: number; maxLength?: number;
  minimum?: number; maximum?: number; minItems?: number; anyOf?: Schema[]; oneOf?: Schema[];
};

export interface SchemaContext {
  /** An agent of the route's company, for the route's agent field. */
  agentId: string;
  /** An agent of another company: the kernel refuses it in the agent field. */
  foreignAgentId: string;
  agentField?: string;
}

const types = (schema: Schema): string[] => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);

function sample(rng: Random, schema: Schema, name: string, context: SchemaContext): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return rng.pick(schema.enum);
  const branch = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (branch) return sample(rng, branch, name, context);
  const type = types(schema).find((t) => t !== 'null') ?? 'string';
  switch (type) {
    case 'string': {
      if (name === context.agentField) return context.agentId;
      if (schema.format === 'uuid') return rng.uuid();
      if (schema.format === 'date-time') return new Date().toISOString();
      if (schema.format === 'date') return new Date().toISOString().slice(0, 10);
      const candidates = ['x', 'abc', 'USD', 'a1', 'fuzz_kind'];
      const fitting = schema.pattern ? candidates.find((c) => new RegExp(schema.pattern!).test(c)) : 'x';
      return (fitting ?? 'x').padEnd(schema.minLength ?? 1, 'x');
    }
    case 'integer': case 'number': return Math.max(schema.minimum ?? 0, Math.min(schema.maximum ?? 1, 1));
    case 'boolean': return rng.chance(0.5);
    case 'array': return [];
    case 'object': return baseObject(rng, schema, context);
    default: return null;
  }
}

function baseObject(rng: Random, schema: Schema, context: SchemaContext): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (schema.required?.includes(name) || rng.chance(0.4)) out[name] = sample(rng, property, name, context);
  }
  return out;
}

/** A JSON value of a type the property does not allow (integers count as numbers). */
function wrongTyped(rng: Random, property: Schema): unknown | undefined {
  const allowed = types(property);
  if (allowed.length === 0 || property.enum || property.anyOf || property.oneOf) return undefined;
  const candidates: Array<[string[], unknown]> = [
    [['string'], 'x'], [['number'], 1.5], [['integer', 'number'], 7], [['boolean'], true], [['null'], null], [['object'], { a: 1 }], [['array'], [1]],
  ];
  const wrong = candidates.filter(([kinds]) => !kinds.some((kind) => allowed.includes(kind)));
  return wrong.length ? rng.pick(wrong)[1] : undefined;
}

/** A body that passes the schema, as far as the schema can tell (patterns are met where a simple value can). */
export function schemaBody(rng: Random, schema: Schema | undefined, context: SchemaContext): FuzzBody {
  return { label: 'a body that passes the schema', contentType: 'application/json', body: JSON.stringify(schema ? baseObject(rng, schema, context) : {}) };
}

export function schemaViolation(rng: Random, schema: Schema, context: SchemaContext): FuzzBody {
  const base = baseObject(rng, schema, context);
  const properties = Object.entries(schema.properties ?? {});
  const violations: Array<() => [string, unknown]> = [];
  for (const name of schema.required ?? []) violations.push(() => { const { [name]: _, ...rest } = base; return [`without required ${name}`, rest]; });
  for (const [name, property] of properties) {
    const wrong = wrongTyped(rng, property);
    if (wrong !== undefined) violations.push(() => [`${name} of a wrong type`, { ...base, [name]: wrong }]);
    if (property.enum) violations.push(() => [`${name} outside its enum`, { ...base, [name]: 'not-in-the-enum' }]);
    if (property.maxLength !== undefined) violations.push(() => [`${name} too long`, { ...base, [name]: 'y'.repeat(property.maxLength! + 1) }]);
    if (property.maximum !== undefined) violations.push(() => [`${name} over its maximum`, { ...base, [name]: property.maximum! + 1 }]);
    if (property.minimum !== undefined) violations.push(() => [`${name} under its minimum`, { ...base, [name]: property.minimum! - 1 }]);
    if (property.format === 'uuid' && name !== context.agentField) violations.push(() => [`${name} not a uuid`, { ...base, [name]: 'not-a-uuid' }]);
    if (property.format === 'date-time') violations.push(() => [`${name} not a date-time`, { ...base, [name]: rng.pick(['2024-13-45T99:99:99Z', 'yesterday', '']) }]);
    if (types(property).includes('string')) violations.push(() => [`${name} with unstorable text`, { ...base, [name]: `x${rng.pick(['\u0000', '\ud800', '\udc00'])}` }]);
  }
  if (schema.additionalProperties === false) violations.push(() => ['an unknown field', { ...base, [`extra_${rng.hex(4)}`]: 1 }]);
  if (context.agentField && schema.properties?.[context.agentField]) {
    violations.push(() => [`${context.agentField} of another company`, { ...base, [context.agentField!]: context.foreignAgentId }]);
  }
  if (types(schema).includes('object')) violations.push(() => ['an array for the object', [base]]);
  const [label, body] = rng.pick(violations)();
  return { label: `schema: ${label}`, contentType: 'application/json', body: JSON.stringify(body) };
}
