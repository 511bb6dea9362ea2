import type { RouteModule } from '../http/app.ts';
import { iso, type Queryable } from '../db/database.ts';
import { conflict, forbidden, notFound } from '../http/errors.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { createOnceForRequest } from '../http/idempotent-create.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../http/idempotency-key.ts';
import { bodyValidator, isUuid } from '../http/validate.ts';
import { AGENT_KEY_PREFIX, displayPrefix, hashToken, mintToken } from '../auth/tokens.ts';
import { AGENT_REFERENCE_PARAMETERS, agentForRequest, agentMayManageAgents, type Caller } from './agent-access.ts';
import { lockAgent, type AgentRow } from './agents.ts';

/**
 * Long-lived agent API keys. Only the SHA-256 of a key is stored; the plaintext is in the
 * creation response and nowhere else. Revocation evicts the key from every process's auth
 * cache inside the revoking transaction.
 */
const createKeyBody = bodyValidator<{ name?: string }>({
  type: 'object',
  properties: { name: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' } },
});

interface KeyRow { id: string; agent_id: string; name: string; key_prefix: string; created_at: string; last_used_at: string | null; revoked_at: string | null }

function toKeyJson(row: KeyRow): Record<string, unknown> {
  return { id: row.id, name: row.name, keyPrefix: row.key_prefix, createdAt: iso(row.created_at), lastUsedAt: iso(row.last_used_at), revokedAt: iso(row.revoked_at) };
}

/** The board, the agent itself, or an agent of the company holding agents:create. */
async function assertMayManageKeys(db: Queryable, caller: Caller, agent: AgentRow): Promise<void> {
  if (caller.kind === 'board') return;
  if (caller.agentId === agent.id) return;
  if (await agentMayManageAgents(db, caller.agentId, agent.company_id)) return;
  throw forbidden("Missing permission: managing another agent's keys requires the agents:create grant", 'permission_denied', { permission: 'agents:create' });
}

export const agentKeyRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');
  const parameters = AGENT_REFERENCE_PARAMETERS;

  route({
    method: 'GET', path: '/api/agents/:agentId/keys', auth: 'any', parameters, success: 200, response: LIST_RESPONSE,
    summary: "The agent's API keys (never the keys themselves)",
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayManageKeys(kernel.db, caller, agent);
    const rows = await kernel.db.query<KeyRow>('select * from agent_api_keys where agent_id = ? order by created_at desc, id', [agent.id]);
    ctx.body = rows.map(toKeyJson);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/keys', auth: 'any', body: createKeyBody, parameters: [...parameters, IDEMPOTENCY_KEY_PARAMETER], success: 201, errors: [409],
    summary: 'Create an agent API key (the key is in this answer and nowhere else; a replay under the same Idempotency-Key answers the key with token null)',
  }, async (ctx, req) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayManageKeys(kernel.db, caller, agent);
    const body = await req.body();
    const token = mintToken(AGENT_KEY_PREFIX);
    ctx.set('Cache-Control', 'no-store');
    // Only the key's hash is stored, so a replay cannot show the token again: it answers the key
    // it made with token null, and the client revokes that key and creates another.
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'agent_key', companyId: agent.company_id, request: { agentId: agent.id, ...body },
      load: async (id) => {
        const key = await tx.maybeOne<KeyRow>('select * from agent_api_keys where id = ? and agent_id = ?', [id, agent.id]);
        return key ? { id: key.id, name: key.name, token: null, keyPrefix: key.key_prefix, createdAt: iso(key.created_at) } : null;
      },
      create: async () => {
        const row = await insertKey(tx);
        return { id: row.id, answer: { id: row.id, name: row.name, token: token as string | null, keyPrefix: row.key_prefix, createdAt: iso(row.created_at) } };
      },
    }));

    async function insertKey(tx: Queryable): Promise<KeyRow> {
      const locked = await lockAgent(tx, agent.id);
      if (locked.status === 'terminated') throw conflict('Cannot create keys for terminated agents', { status: locked.status }, 'agent_inactive');
      if (locked.status === 'pending_approval') throw conflict('Cannot create keys for pending approval agents', { status: locked.status }, 'agent_inactive');
      const rows = await tx.query<KeyRow>(
        'insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values (?, ?, ?, ?, ?) returning *',
        [locked.id, locked.company_id, body.name?.trim() ?? 'default', hashToken(token), displayPrefix(token)],
      );
      const key = rows[0]!;
      await kernel.activity.recordFor(ctx, tx, {
        companyId: locked.company_id, action: 'agent.key_created', entityType: 'agent', entityId: locked.id,
        details: { keyId: key.id, name: key.name, keyPrefix: key.key_prefix },
      });
      return key;
    }
  });

  route({ method: 'DELETE', path: '/api/agents/:agentId/keys/:keyId', auth: 'any', parameters, success: 200, summary: 'Revoke an agent API key' }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayManageKeys(kernel.db, caller, agent);
    const keyId = ctx.params.keyId;
    if (!isUuid(keyId)) throw notFound('Key not found');
    const row = await kernel.db.transaction(async (tx) => {
      const existing = await tx.maybeOne<KeyRow>('select * from agent_api_keys where id = ? and agent_id = ? for update', [keyId.toLowerCase(), agent.id]);
      if (!existing) throw notFound('Key not found');
      if (existing.revoked_at) return existing;
      const rows = await tx.query<KeyRow>('update agent_api_keys set revoked_at = now() where id = ? returning *', [existing.id]);
      await kernel.invalidate(tx, { type: 'credential_id', id: existing.id });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: agent.company_id, action: 'agent.key_revoked', entityType: 'agent', entityId: agent.id,
        details: { keyId: existing.id, name: existing.name, keyPrefix: existing.key_prefix },
      });
      return rows[0]!;
    });
    ctx.body = toKeyJson(row);
  });
};
