import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { Actor } from '../auth/actor.ts';
import type { Tx } from '../db/database.ts';
import { checkConfiguredAddresses } from '../executions/configured-addresses.ts';
import { KeelError } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { applyDefaultModel } from './adapter-defaults.ts';
import { isSecretRef } from './agent-config.ts';
import { callerIds } from './agent-service.ts';

type Config = Record<string, unknown>;

/** `answered`: a plugin contributes the type (and validated the configuration). */
export interface ContributedConfig { adapterConfig: Config; secretFields: string[]; answered: boolean }

/**
 * The adapterConfig of a create, hire or update whose adapter type a plugin contributes, as
 * that plugin validated and normalised it (kernel point `agent.adapter-config`), or refused it
 * (its 4xx names the field). Asked before the transaction: a refusal leaves nothing behind.
 * With no plugin contributing the type, the configuration is kept as given (a create gets the
 * kernel's default model for the types that have one).
 */
export async function contributedAdapterConfig(ctx: Context, kernel: KernelServices, request: {
  companyId: string; adapterType: string; adapterConfig: Config; agentId: string | null;
}): Promise<ContributedConfig> {
  const answer = await kernel.points.consult('agent.adapter-config', { companyId: request.companyId, actor: ctx.state.actor as Actor }, {
    adapterType: request.adapterType, adapterConfig: request.adapterConfig, agentId: request.agentId,
  });
  // Nobody contributes the type: kept as given, with the kernel's default model on a create (agentId null).
  if (!answer) return { adapterConfig: request.agentId === null ? applyDefaultModel(request.adapterType, request.adapterConfig) : request.adapterConfig, secretFields: [], answered: false };
  // The addresses it names are checked now as the executor checks them at connection: nothing is written with one it would refuse.
  const [plugin] = kernel.points.contributors('agent.adapter-config', request.adapterType);
  await checkConfiguredAddresses(answer.adapterConfig, { connect: answer.addressFields ?? [], instance: answer.instanceAddressFields ?? [] },
    kernel.config, plugin ?? '', kernel.executions.servedHosts);
  return { adapterConfig: answer.adapterConfig, secretFields: answer.secretFields ?? [], answered: true };
}

/**
 * The fields the contributing plugin named secret: a plain value is stored in the vault (a new
 * secret of the company, written in the agent's transaction) and replaced by its reference; a
 * reference must name a secret of the same company. The value never reaches activity or logs.
 */
export async function storeSecretFields(ctx: Context, kernel: KernelServices, tx: Tx, companyId: string, contributed: ContributedConfig): Promise<Config> {
  const config = { ...contributed.adapterConfig };
  for (const field of contributed.secretFields) {
    const value = config[field];
    const path = `adapterConfig.${field}`;
    if (typeof value === 'string' && value.length > 0) {
      const created = await kernel.vault.create(tx, {
        companyId, name: `adapter-${field}-${randomUUID().slice(0, 8)}`, value, description: `Stored from an agent's ${path}`, creator: callerIds(ctx),
      });
      await kernel.activity.recordFor(ctx, tx, {
        companyId, action: 'secret.created', entityType: 'secret', entityId: created.id, details: { name: created.name, provider: created.provider, version: 1, source: path },
      });
      config[field] = { type: 'secret_ref', secretId: created.id, version: 'latest' };
    } else if (isSecretRef(value)) {
      if (!isUuid(value.secretId)) throw new KeelError(422, 'invalid_secret_ref', `Invalid secret reference: ${path}.secretId must be a uuid`, { details: { path } });
      const secret = await tx.maybeOne<{ id: string }>('select id from secrets where id = ? and company_id = ?', [String(value.secretId).toLowerCase(), companyId]);
      if (!secret) throw new KeelError(422, 'secret_ref_company_mismatch', `Secret reference ${path} must name a secret of the same company`, { details: { path } });
    }
  }
  return config;
}
