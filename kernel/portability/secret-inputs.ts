import { REDACTED } from '../../sdk/shared/sanitize.ts';
import type { Queryable } from '../db/database.ts';
import { unprocessable } from '../http/errors.ts';
import { isPlainObject, isSecretRef, maskConfig } from '../tenancy/agent-config.ts';
import type { Vault } from '../vault/vault.ts';
import { INPUT_PLACEHOLDER, type PackageInput } from './package.ts';

type Config = Record<string, unknown>;

/**
 * Secrets never leave in a package. Every secret reference, and every string the API would
 * mask (under a sensitive name, or shaped like a credential), becomes an input placeholder
 * `{type: 'portability_input', input}` declared under the manifest's `inputs`; the value and
 * the secret's id stay behind.
 */
export function extractInputs(config: Config, agent: { id: string; urlKey: string }, root: string, inputs: PackageInput[]): Config {
  const masked = maskConfig(config);
  const walk = (value: unknown, view: unknown, path: string): unknown => {
    if (isSecretRef(value) || (typeof value === 'string' && view === REDACTED)) {
      const name = `${agent.urlKey}.${path}`;
      inputs.push({ name, agentId: agent.id, path, description: `Value of ${path} for agent ${agent.urlKey}` });
      return { type: INPUT_PLACEHOLDER, input: name };
    }
    if (Array.isArray(value)) return value.map((item, index) => walk(item, (view as unknown[])[index], `${path}.${index}`));
    if (isPlainObject(value)) {
      const out: Config = {};
      for (const [key, item] of Object.entries(value)) out[key] = walk(item, (view as Config)[key], `${path}.${key}`);
      return out;
    }
    return value;
  };
  return walk(config, masked, root) as Config;
}

function isPlaceholder(value: unknown): value is { type: string; input: string } {
  return isPlainObject(value) && value.type === INPUT_PLACEHOLDER && typeof value.input === 'string';
}

/** The placeholders a configuration holds, by input name. */
export function placeholdersIn(value: unknown, found: Set<string> = new Set()): Set<string> {
  if (isPlaceholder(value)) found.add(value.input);
  else if (Array.isArray(value)) for (const item of value) placeholdersIn(item, found);
  else if (isPlainObject(value)) for (const item of Object.values(value)) placeholdersIn(item, found);
  return found;
}

/** Refuses an import that is missing inputs it needs, naming every one (nothing is written). */
export function assertInputsGiven(needed: Iterable<string>, given: Record<string, string>): void {
  const missing = [...new Set(needed)].filter((name) => typeof given[name] !== 'string').sort();
  if (missing.length > 0) {
    throw unprocessable(`The package declares inputs the import must be given: ${missing.join(', ')}`, { missing }, 'portability_inputs_missing');
  }
}

/**
 * Puts the given values where the placeholders are. An environment variable's value is stored
 * in the vault as a new secret of the target company and referenced (`latest`), so the value
 * is never stored in the configuration itself; anywhere else the value is written as given
 * (where the source had it inline).
 */
export async function fillInputs(db: Queryable, vault: Vault, config: Config, given: Record<string, string>, options: { companyId: string; agentUrlKey: string; creator: { userId: string | null; agentId: string | null } }): Promise<Config> {
  const fill = async (value: unknown, path: string[]): Promise<unknown> => {
    if (isPlaceholder(value)) {
      const secretValue = given[value.input]!;
      if (path.length === 2 && path[0] === 'env') {
        const secret = await vault.create(db, {
          companyId: options.companyId, name: await freeSecretName(db, options.companyId, `${options.agentUrlKey}-${path[1]}`),
          value: secretValue, description: `Imported with the company package (input ${value.input})`, creator: options.creator,
        });
        return { type: 'secret_ref', secretId: secret.id, version: 'latest' };
      }
      return secretValue;
    }
    if (Array.isArray(value)) return Promise.all(value.map((item, index) => fill(item, [...path, String(index)])));
    if (isPlainObject(value)) {
      const out: Config = {};
      for (const [key, item] of Object.entries(value)) out[key] = await fill(item, [...path, key]);
      return out;
    }
    return value;
  };
  return await fill(config, []) as Config;
}

async function freeSecretName(db: Queryable, companyId: string, base: string): Promise<string> {
  const name = base.slice(0, 150);
  const rows = await db.query<{ name: string }>("select name from secrets where company_id = ? and (name = ? or name like ? || '-%')", [companyId, name, name]);
  const taken = new Set(rows.map((row) => row.name));
  if (!taken.has(name)) return name;
  for (let n = 2; ; n++) if (!taken.has(`${name}-${n}`)) return `${name}-${n}`;
}
