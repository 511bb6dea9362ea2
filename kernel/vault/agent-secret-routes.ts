import type { Context } from 'koa';
import type { AgentActor } from '../auth/actor.ts';
import { iso, type Row } from '../db/database.ts';
import type { RouteModule } from '../http/app.ts';
import { forbidden, KeelError, notFound } from '../http/errors.ts';
import { createOnceForRequest } from '../http/idempotent-create.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../http/idempotency-key.ts';
import { uuidParam } from '../http/request.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator, uuidPattern } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { companyForRequest } from '../tenancy/company-access.ts';

const GRANT_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

const createGrant = bodyValidator<{ secretId: string; key: string; delivery: 'env' | 'api' | 'both'; version?: 'latest' | number; description?: string | null; projectionClass?: string }>({
  type: 'object',
  required: ['secretId', 'key', 'delivery'],
  properties: {
    secretId: { type: 'string', pattern: uuidPattern },
    key: { type: 'string', pattern: GRANT_KEY.source },
    delivery: { enum: ['env', 'api', 'both'] },
    version: { anyOf: [{ const: 'latest' }, { type: 'integer', minimum: 1 }] },
    description: { type: ['string', 'null'], maxLength: 2000 },
    projectionClass: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,63}$' },
  },
});

/** Runs that may never read secret values, whatever was granted. */
const DENIED_INVOCATION_SOURCES = new Set(['skill_test']);

/**
 * The run-bound check of an agent its route's guard admitted: an agent JWT whose signed
 * `run_id` names a live run of this agent. Agent API keys (no run), closed runs, skill-test
 * runs and low-trust review agents are refused with 403.
 */
async function requireRunBoundAgent(actor: AgentActor, kernel: KernelServices): Promise<{ actor: AgentActor; run: Row }> {
  if (actor.source !== 'agent_jwt' || !actor.runVerified || !actor.runId) {
    throw forbidden('Secret routes require an agent token bound to a live run', 'run_bound_token_required');
  }
  if (!(await kernel.runs.isLive(actor.runId, actor.agentId, actor.companyId))) {
    throw forbidden('Secret routes require an agent token bound to a live run', 'run_bound_token_required');
  }
  const run = await kernel.db.maybeOne('select r.*, a.metadata as agent_metadata from runs r join agents a on a.id = r.agent_id where r.id = ?', [actor.runId]);
  if (!run) throw forbidden('Secret routes require an agent token bound to a live run', 'run_bound_token_required');
  if (DENIED_INVOCATION_SOURCES.has(run.invocation_source) || run.agent_metadata?.trustLevel === 'low') {
    throw forbidden('This run is not allowed to read secrets (secrets:read)', 'secrets_read_denied');
  }
  return { actor, run };
}

function grantEntry(row: Row) {
  const selector = row.version_selector === 'latest' ? 'latest' : Number(row.version_selector);
  return {
    key: row.key,
    name: row.name,
    description: row.description ?? row.secret_description ?? null,
    delivery: row.delivery,
    projectionClass: row.projection_class,
    latestVersion: Number(row.latest_version),
    versionSelector: selector,
    resolvedVersion: selector === 'latest' ? Number(row.latest_version) : selector,
  };
}

function grantRecord(row: Row) {
  return {
    id: row.id, agentId: row.agent_id, companyId: row.company_id, secretId: row.secret_id, key: row.key,
    delivery: row.delivery, versionSelector: row.version_selector === 'latest' ? 'latest' : Number(row.version_selector),
    projectionClass: row.projection_class, description: row.description ?? null,
    createdAt: iso(row.created_at), updatedAt: iso(row.updated_at),
  };
}

/** The agent of a board request (its route's guard admitted the board), in a company the caller reaches. */
async function boardAgent(ctx: Context, kernel: KernelServices): Promise<Row> {
  const agentId = uuidParam(ctx, 'agentId', 'Agent');
  const agent = await kernel.db.maybeOne('select id, company_id from agents where id = ?', [agentId]);
  if (!agent) throw notFound('Agent not found');
  await companyForRequest(ctx, kernel.db, agent.company_id);
  return agent;
}

export const agentSecretRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Secrets');

  route({
    method: 'GET', path: '/api/agents/me/secrets', auth: 'agent_run', success: 200,
    summary: 'Secrets granted to the calling agent (names and versions, never values)',
  }, async (ctx, req) => {
    const { actor } = await requireRunBoundAgent(req.actor, kernel);
    const rows = await kernel.db.query(
      `select g.*, s.name, s.latest_version, s.description as secret_description from agent_secret_grants g
       join secrets s on s.id = g.secret_id where g.agent_id = ? order by g.key`, [actor.agentId]);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { secrets: rows.map(grantEntry) };
  });

  route({
    method: 'POST', path: '/api/agents/me/secrets/:key/value', auth: 'agent_run', success: 200,
    summary: 'Read the value of a secret granted for API delivery (audited)',
  }, async (ctx, req) => {
    const { actor, run } = await requireRunBoundAgent(req.actor, kernel);
    const key = ctx.params.key ?? '';
    // A key that no grant could carry is simply not granted (and never reaches the database).
    if (!GRANT_KEY.test(key)) throw forbidden(`Secret "${key}" is not granted to this agent for API delivery`, 'secret_not_granted');
    const grant = await kernel.db.maybeOne(
      `select g.* from agent_secret_grants g where g.agent_id = ? and g.key = ? and g.delivery in ('api', 'both')`, [actor.agentId, key]);
    if (!grant) throw forbidden(`Secret "${key}" is not granted to this agent for API delivery`, 'secret_not_granted');
    const selector = grant.version_selector === 'latest' ? 'latest' : Number(grant.version_selector);
    const result = await kernel.db.transaction(async (tx) => {
      const revealed = await kernel.vault.reveal(tx, actor.companyId, grant.secret_id, selector);
      await tx.query(
        `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, secret_id, secret_version, details)
         values (?, 'agent', ?, 'secret.value_read', ?, ?, ?, ?, ?::jsonb)`,
        [actor.companyId, actor.agentId, actor.agentId, run.id, grant.secret_id, revealed.version, JSON.stringify({ key, delivery: grant.delivery })]);
      await kernel.activity.recordFor(ctx, tx, {
        companyId: actor.companyId, action: 'secret.value_read', entityType: 'secret', entityId: grant.secret_id,
        details: { key, version: revealed.version, runId: run.id },
      });
      return revealed;
    });
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = { key, value: result.value, version: result.version };
  });

  route({
    method: 'GET', path: '/api/agents/:agentId/secret-grants', auth: 'board', success: 200, response: LIST_RESPONSE,
    summary: "The agent's secret grants",
  }, async (ctx) => {
    const agent = await boardAgent(ctx, kernel);
    const rows = await kernel.db.query('select * from agent_secret_grants where agent_id = ? order by key', [agent.id]);
    ctx.body = rows.map(grantRecord);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/secret-grants', auth: 'board', body: createGrant, success: 201, errors: [409, 422], parameters: [IDEMPOTENCY_KEY_PARAMETER],
    summary: 'Grant a secret of the company to the agent under a key',
  }, async (ctx, req) => {
    const agent = await boardAgent(ctx, kernel);
    const body = await req.body();
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'secret_grant', companyId: agent.company_id, request: { agentId: agent.id, ...body },
      load: async (id) => { const row = await tx.maybeOne('select * from agent_secret_grants where id = ? and agent_id = ?', [id, agent.id]); return row ? grantRecord(row) : null; },
      create: async () => {
        const secret = await tx.maybeOne('select id, company_id, latest_version from secrets where id = ?', [body.secretId.toLowerCase()]);
        if (!secret || secret.company_id !== agent.company_id) {
          throw new KeelError(422, 'secret_ref_company_mismatch', 'secretId must name a secret of the agent\'s company');
        }
        if (typeof body.version === 'number' && body.version > Number(secret.latest_version)) {
          throw new KeelError(422, 'secret_version_not_found', `The secret has no version ${body.version}`);
        }
        // The unique key decides, not an earlier read: of concurrent identical grants one is stored and the others answer 409.
        const row = await tx.maybeOne(
          `insert into agent_secret_grants (company_id, agent_id, secret_id, key, delivery, version_selector, projection_class, description, created_by_user_id)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict (agent_id, key) do nothing returning *`,
          [agent.company_id, agent.id, secret.id, body.key, body.delivery, String(body.version ?? 'latest'), body.projectionClass ?? 'standard', body.description ?? null,
            (ctx.state.actor as { userId?: string }).userId ?? null]);
        if (!row) throw new KeelError(409, 'secret_grant_conflict', `The agent already has a secret granted as "${body.key}"`);
        await kernel.activity.recordFor(ctx, tx, {
          companyId: agent.company_id, action: 'secret.granted', entityType: 'agent', entityId: agent.id, agentId: agent.id,
          details: { secretId: secret.id, key: body.key, delivery: body.delivery, versionSelector: String(body.version ?? 'latest') },
        });
        return { id: String(row.id), answer: grantRecord(row) };
      },
    }));
  });

  route({ method: 'DELETE', path: '/api/agents/:agentId/secret-grants/:grantId', auth: 'board', success: 200, summary: 'Revoke a secret grant' }, async (ctx) => {
    const agent = await boardAgent(ctx, kernel);
    const grantId = uuidParam(ctx, 'grantId', 'Secret grant');
    await kernel.db.transaction(async (tx) => {
      const row = await tx.maybeOne('delete from agent_secret_grants where id = ? and agent_id = ? returning *', [grantId, agent.id]);
      if (!row) throw notFound('Secret grant not found');
      await kernel.activity.recordFor(ctx, tx, {
        companyId: agent.company_id, action: 'secret.grant_revoked', entityType: 'agent', entityId: agent.id, agentId: agent.id,
        details: { secretId: row.secret_id, key: row.key },
      });
    });
    ctx.body = { ok: true };
  });
};
