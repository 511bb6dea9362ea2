/**
 * Kernel points: questions the kernel asks plugins synchronously before it makes a change, and
 * whose answer changes what it stores (where an in_transaction hook can only veto). A plugin
 * answers a point with one of its own services (manifest `kernelPoints`, capability
 * `kernel.points`); the kernel calls it read-only with the request's company and actor, checks
 * the answer against the point's `output` schema, and either uses it or answers the plugin's
 * refusal (a 4xx status and message the plugin chose) without changing anything.
 *
 * Declared here, once, so the manifest schema, the kernel and the SDK's types read the same list.
 */
import type { FromSchema } from 'json-schema-to-ts';

const skillReferences = { type: 'array', maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 512 } } as const;

export const KERNEL_POINTS = {
  'agent.desired-skills': {
    summary: "Resolve the desiredSkills of an agent create, hire or update to the list the kernel stores in adapterConfig.serviceSkillSync (or refuse them)",
    input: {
      type: 'object', additionalProperties: false, required: ['desiredSkills', 'adapterType', 'agentId'],
      properties: {
        desiredSkills: skillReferences,
        adapterType: { type: 'string', minLength: 1, maxLength: 100 },
        /** null on create and hire (the agent does not exist yet). */
        agentId: { type: ['string', 'null'] },
      },
    },
    output: {
      type: 'object', additionalProperties: false, required: ['desiredSkills'],
      properties: { desiredSkills: skillReferences },
    },
  },
  'agent.adapter-config': {
    summary: "Validate and normalise the adapterConfig of an agent create, hire or update whose adapterType the plugin contributes (declared with adapterTypes); plain values of the fields named in secretFields are stored in the vault and replaced by secret references; the URLs named in addressFields (Keel connects to them) and instanceAddressFields (this instance's address, handed to the remote side) are checked as at connection",
    input: {
      type: 'object', additionalProperties: false, required: ['adapterType', 'adapterConfig', 'agentId'],
      properties: {
        adapterType: { type: 'string', minLength: 1, maxLength: 100 },
        adapterConfig: { type: 'object' },
        agentId: { type: ['string', 'null'] },
      },
    },
    output: {
      type: 'object', additionalProperties: false, required: ['adapterConfig'],
      properties: {
        adapterConfig: { type: 'object' },
        secretFields: { type: 'array', maxItems: 10, items: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' } },
        addressFields: { type: 'array', maxItems: 10, items: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' } },
        instanceAddressFields: { type: 'array', maxItems: 10, items: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' } },
      },
    },
  },
} as const;

export type KernelPointName = keyof typeof KERNEL_POINTS;
export const KERNEL_POINT_NAMES = Object.keys(KERNEL_POINTS) as KernelPointName[];

/**
 * What a point is asked and answers, derived from its schemas above (json-schema-to-ts): the
 * kernel's call, the plugin's service and the check of the answer read the same declaration.
 * `addressFields` are URLs Keel connects to and `instanceAddressFields` addresses of this
 * instance handed to the remote side; the kernel checks both at write as the executor does at
 * connection.
 */
export interface KernelPointShapes extends DerivedShapes {}

// Resolved once, through the interface above: indexed by a generic point, a mapped type would
// instantiate FromSchema again for every use.
type DerivedShapes = {
  [Point in KernelPointName]: {
    input: FromSchema<(typeof KERNEL_POINTS)[Point]['input']>;
    output: FromSchema<(typeof KERNEL_POINTS)[Point]['output']>;
  };
};

/** Statuses a plugin may answer a point with; anything else counts as failing to answer (503). */
export const KERNEL_POINT_REFUSAL_STATUSES = [400, 403, 404, 409, 422] as const;
