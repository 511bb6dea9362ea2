import { bodyValidator, type Schema } from '../http/validate.ts';
import type { CollisionStrategy } from './parts.ts';

/**
 * The company package: one manifest (structured fields of the company, its agents with their
 * org chart and adapter configuration, the declared inputs and each plugin's part) plus
 * markdown files (the company's description, each agent's AGENTS.md, and whatever files the
 * plugins' parts carry). `keel company export` writes it as a folder: `keel.json` (the
 * manifest) and the markdown files at their paths. Secrets are never in it: every secret
 * reference and every value that looks like a credential is replaced by an input placeholder,
 * declared under `inputs`, which the import must be given.
 */
export const PACKAGE_FORMAT = 'keel.company-package';
export const PACKAGE_VERSION = 1;
/** Where a secret was: `{type: 'portability_input', input: '<name>'}`; the import puts the given value there. */
export const INPUT_PLACEHOLDER = 'portability_input';
/** A package of 10^4 issues is a few MiB; the import body may be this large (the API's usual limit is 1 MiB). */
export const PACKAGE_MAX_BYTES = 64 * 1024 * 1024;

export interface PackageAgent {
  /** The agent's id in the source company: the org chart and the plugins' parts refer to agents by it. */
  id: string;
  name: string;
  urlKey: string;
  role: string;
  title: string | null;
  icon: string | null;
  reportsTo: string | null;
  adapterType: string;
  adapterConfig: Record<string, unknown>;
  runtimeConfig: Record<string, unknown>;
  budgetMonthlyCents: number;
  permissions: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  /** AGENTS.md: the agent's capabilities text. */
  instructionsPath: string;
}

export interface PackageInput { name: string; agentId: string; path: string; description: string }

export interface PackageManifest {
  source: { companyId: string; exportedAt: string };
  company: { name: string; descriptionPath: string; budgetMonthlyCents: number; requireBoardApprovalForNewAgents: boolean; brandColor: string | null };
  agents: PackageAgent[];
  inputs: PackageInput[];
  /** Configuration the caller could not read is left out; the import then keeps defaults. */
  redacted: string[];
  parts: Record<string, { data: Record<string, unknown>; files: string[] }>;
}

export interface CompanyPackage {
  format: typeof PACKAGE_FORMAT;
  version: typeof PACKAGE_VERSION;
  manifest: PackageManifest;
  files: Record<string, string>;
}

const text = (max: number): Schema => ({ type: 'string', maxLength: max });
const nullableText = (max: number): Schema => ({ type: ['string', 'null'], maxLength: max });
const object: Schema = { type: 'object' };
const filePath = { type: 'string', minLength: 1, maxLength: 512, pattern: '^[A-Za-z0-9][A-Za-z0-9_.\\-/ ]*$' };

const agentSchema: Schema = {
  type: 'object', additionalProperties: false,
  required: ['id', 'name', 'urlKey', 'role', 'adapterType', 'adapterConfig', 'runtimeConfig', 'instructionsPath'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 }, name: { type: 'string', minLength: 1, maxLength: 200 }, urlKey: text(200),
    role: text(100), title: nullableText(200), icon: nullableText(100), reportsTo: nullableText(64),
    adapterType: { type: 'string', minLength: 1, maxLength: 100 }, adapterConfig: object, runtimeConfig: object,
    budgetMonthlyCents: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }, permissions: object,
    metadata: { type: ['object', 'null'] }, instructionsPath: filePath,
  },
};

export const packageSchema: Schema = {
  type: 'object', additionalProperties: false, required: ['format', 'version', 'manifest', 'files'],
  properties: {
    format: { const: PACKAGE_FORMAT }, version: { const: PACKAGE_VERSION },
    manifest: {
      type: 'object', additionalProperties: false, required: ['source', 'company', 'agents', 'inputs', 'parts'],
      properties: {
        source: { type: 'object', required: ['companyId'], properties: { companyId: text(64), exportedAt: text(64) } },
        company: {
          type: 'object', additionalProperties: false, required: ['name', 'descriptionPath'],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 }, descriptionPath: filePath,
            budgetMonthlyCents: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
            requireBoardApprovalForNewAgents: { type: 'boolean' }, brandColor: { type: ['string', 'null'], pattern: '^#[0-9a-fA-F]{6}$' },
          },
        },
        agents: { type: 'array', maxItems: 1000, items: agentSchema },
        inputs: {
          type: 'array', maxItems: 1000,
          items: { type: 'object', additionalProperties: false, required: ['name', 'agentId', 'path'], properties: { name: text(300), agentId: text(64), path: text(300), description: text(1000) } },
        },
        redacted: { type: 'array', maxItems: 20, items: text(100) },
        parts: {
          type: 'object', maxProperties: 50, propertyNames: { pattern: '^[a-z][a-z0-9]*(-[a-z0-9]+)*$', maxLength: 48 },
          additionalProperties: {
            type: 'object', additionalProperties: false, required: ['data', 'files'],
            properties: { data: object, files: { type: 'array', maxItems: 200_000, items: filePath } },
          },
        },
      },
    },
    files: { type: 'object', maxProperties: 250_000, propertyNames: filePath, additionalProperties: { type: 'string', maxLength: 1_000_000 } },
  },
};

export const COLLISION_STRATEGIES: readonly CollisionStrategy[] = ['rename', 'skip', 'replace'];

/** The import request: the package, where it goes, what to do on a name collision, and the declared inputs' values. */
export interface ImportBody {
  package: CompanyPackage;
  target?: { mode: 'new_company'; name?: string } | { mode: 'existing_company'; companyId: string };
  collisionStrategy?: CollisionStrategy;
  inputs?: Record<string, string>;
}

const importProperties = {
  package: packageSchema,
  collisionStrategy: { enum: [...COLLISION_STRATEGIES], default: 'rename' },
  inputs: { type: 'object', maxProperties: 1000, additionalProperties: { type: 'string', maxLength: 64 * 1024 } },
};

/** The board's instance-level import: a new company, or an existing one it reaches. */
export const boardImportValidator = bodyValidator<ImportBody>({
  type: 'object', additionalProperties: false, required: ['package'],
  properties: {
    ...importProperties,
    target: {
      oneOf: [
        { type: 'object', additionalProperties: false, required: ['mode'], properties: { mode: { const: 'new_company' }, name: { type: 'string', minLength: 1, maxLength: 200 } } },
        { type: 'object', additionalProperties: false, required: ['mode', 'companyId'], properties: { mode: { const: 'existing_company' }, companyId: { type: 'string', format: 'uuid' } } },
      ],
    },
  },
});

/** The company-scoped import: the route's company is the target; `replace` is refused by the route with its own 422. */
export const companyImportValidator = bodyValidator<ImportBody>({
  type: 'object', additionalProperties: false, required: ['package'], properties: importProperties,
});

export const exportValidator = bodyValidator<Record<string, never>>({ type: 'object', additionalProperties: false, properties: {} });
