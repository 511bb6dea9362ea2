import { MAX_STORED_SECRET_BYTES, secretsStore as spec } from '../../../../sdk/capabilities/secrets-store.ts';
import { KeelError } from '../../../http/errors.ts';
import { isUuid } from '../../../http/validate.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { BrokeredCall } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/**
 * `ctx.secrets.store` (secrets.store): a value the plugin was handed becomes a secret of the
 * company the call serves, named `<plugin>:<name>`, or a new version of it when that name
 * exists. One transaction of its own (the vault write and its activity entry, with the call's
 * actor), never the value in the entry; the plugin gets the reference only.
 */
async function storeSecret(call: BrokeredCall<'activity' | 'db' | 'vault'>): Promise<{ secretId: string; version: number }> {
  const input = call.args[0] as { name: string; value: string; description?: string | null };
  if (input.value.trim().length === 0) throw new KeelError(400, 'invalid_arguments', 'secrets.store: value must not be blank');
  if (Buffer.byteLength(input.value, 'utf8') > MAX_STORED_SECRET_BYTES) throw new KeelError(400, 'invalid_arguments', `secrets.store: value must be at most ${MAX_STORED_SECRET_BYTES} bytes`);
  if (input.value.includes('\0')) throw new KeelError(400, 'invalid_arguments', 'secrets.store: value must not contain NUL');
  const companyId = callCompany(call);
  const name = `${call.plugin}:${input.name}`;
  const { actor, runId } = call.info;
  // The implicit local board's id (`local-board`) names no user row: such a secret has no creator user.
  const creator = { userId: actor.type === 'user' && isUuid(actor.id) ? actor.id : null, agentId: actor.type === 'agent' ? actor.agentId ?? actor.id : null };
  const { db, vault, activity } = call.kernel;
  return db.transaction(async (tx) => {
    // The row lock serialises two stores of one name; a first store of a name races on the unique index instead.
    const existing = await tx.maybeOne('select * from secrets where company_id = ? and name = ? for update', [companyId, name]);
    const stored = existing
      ? await vault.rotate(tx, existing, { value: input.value, creator })
      : await vault.create(tx, { companyId, name, value: input.value, description: input.description ?? null, creator });
    if (existing && input.description !== undefined) await tx.query('update secrets set description = ? where id = ?', [input.description, stored.id]);
    await activity.record(tx, {
      companyId, actorType: actor.type, actorId: actor.id, agentId: creator.agentId, runId,
      action: existing ? 'secret.rotated' : 'secret.created', entityType: 'secret', entityId: stored.id,
      details: existing ? { name: stored.name, version: stored.latestVersion, plugin: call.plugin } : { name: stored.name, provider: stored.provider, version: 1, plugin: call.plugin },
    });
    return { secretId: stored.id, version: stored.latestVersion };
  });
}

/** `ctx.secrets.describe` (secrets.store): a secret of the call's company by id, metadata only. */
async function describeSecret(call: BrokeredCall<'activity' | 'db' | 'vault'>): Promise<{ secretId: string; name: string; latestVersion: number } | null> {
  const secretId = uuidArg(call.args[0], 'secretId');
  const row = await call.kernel.db.maybeOne(`select id::text as id, name, latest_version from secrets where id = ? and ${OF_CALL_COMPANY}`, [secretId, callCompany(call)]);
  return row ? { secretId: row.id, name: row.name, latestVersion: Number(row.latest_version) } : null;
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['activity', 'db', 'vault'] }, serves: { secrets: { store: { run: storeSecret }, describe: { run: describeSecret } } } });
