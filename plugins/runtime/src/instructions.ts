import { INSTRUCTION_KEY, PluginError, respond, type AgentConfigView, type RouteRequest } from '@keel/sdk/plugin';
import { recordActivity } from './activity.ts';
import { agentConfig } from './admission.ts';
import type { Row, RuntimeContext } from './context.ts';
import {
  bundlePath, DEFAULT_ENTRY_FILE, externalPath, MATERIALISED_DIR, MAX_BUNDLE_BYTES, MAX_BUNDLE_FILES, MAX_FILE_BYTES,
} from './instruction-paths.ts';

/** The key an external path is kept under when the adapter does not need one named. */
const DEFAULT_PATH_KEY = 'instructionsFilePath';

/**
 * Board actors, the agent itself, and agents of the company holding `agents:create` (or the
 * CEO role) read and change an agent's instructions; another agent of the company gets 403.
 */
async function assertMayManage(ctx: RuntimeContext, agentId: string): Promise<void> {
  const actor = await ctx.principals.actor(['agents:create']);
  if (actor.type === 'board') return;
  if (actor.type === 'agent') {
    if (actor.id === agentId || actor.role === 'ceo' || actor.grants.some((grant) => grant.permissionKey === 'agents:create' && grant.companyWide)) return;
  }
  throw new PluginError(403, 'permission_denied', "Missing permission: another agent's instructions need the agents:create grant", { permission: 'agents:create' });
}

async function bundleRow(ctx: RuntimeContext, agentId: string): Promise<Row | undefined> {
  return (await ctx.db.query('select * from instruction_bundles where agent_id = $1', [agentId])).rows[0];
}

async function ensureBundleRow(ctx: RuntimeContext, agentId: string): Promise<Row> {
  await ctx.db.query('insert into instruction_bundles (agent_id, company_id) values ($1, $2) on conflict do nothing', [agentId, ctx.invocation.companyId]);
  return (await ctx.db.query('select * from instruction_bundles where agent_id = $1 for update', [agentId])).rows[0]!;
}

/** Where an external path is recorded, and whether the agent uses it (`instructionsBundleMode: "external"`). */
function externalOf(agent: AgentConfigView, bundle: Row | undefined): { key: string; path: string } | null {
  const key = typeof bundle?.adapter_config_key === 'string' ? bundle.adapter_config_key : DEFAULT_PATH_KEY;
  const path = agent.adapterConfig[key];
  return agent.adapterConfig.instructionsBundleMode === 'external' && typeof path === 'string' ? { key, path } : null;
}

async function bundleView(ctx: RuntimeContext, agent: AgentConfigView) {
  const bundle = await bundleRow(ctx, agent.agentId);
  const external = externalOf(agent, bundle);
  const entryFile = String(bundle?.entry_file ?? DEFAULT_ENTRY_FILE);
  const { rows } = await ctx.db.query('select path, size_bytes, updated_at from instruction_files where agent_id = $1 order by path', [agent.agentId]);
  return {
    agentId: agent.agentId,
    mode: external ? 'external' : 'managed',
    entryFile,
    adapterConfigKey: external?.key ?? (bundle?.adapter_config_key ?? null),
    path: external?.path ?? null,
    materialisedEntryPath: external ? null : `${MATERIALISED_DIR}/${entryFile}`,
    editable: !external,
    files: rows.map((row) => ({ path: row.path, size: Number(row.size_bytes), isEntryFile: row.path === entryFile, updatedAt: row.updated_at })),
    totalBytes: rows.reduce((sum, row) => sum + Number(row.size_bytes), 0),
  };
}

/**
 * Records an external path (absolute, or relative to adapterConfig.cwd) under the adapter's
 * key, or clears it (path null) so the managed bundle is used again. The process adapter has no
 * key of its own: the caller names it (`adapterConfigKey`) once, then it is remembered.
 */
async function setExternal(ctx: RuntimeContext, agent: AgentConfigView, path: unknown, requestedKey: unknown): Promise<void> {
  const bundle = await ensureBundleRow(ctx, agent.agentId);
  const storedKey = typeof bundle.adapter_config_key === 'string' ? bundle.adapter_config_key : null;
  let key: string;
  if (requestedKey !== undefined && requestedKey !== null) {
    if (typeof requestedKey !== 'string' || !INSTRUCTION_KEY.test(requestedKey)) {
      throw new PluginError(422, 'invalid_adapter_config_key', 'adapterConfigKey must be an adapter configuration key (letters, digits, _) whose name contains "instructions" or "agentsMd", such as instructionsFilePath', { field: 'adapterConfigKey' });
    }
    key = requestedKey;
  } else if (storedKey) {
    key = storedKey;
  } else if (agent.adapterType === 'process' && path !== null) {
    throw new PluginError(422, 'adapter_config_key_required', 'The process adapter has no instructions key of its own: name the adapterConfig key that holds the path (adapterConfigKey)', { field: 'adapterConfigKey' });
  } else {
    key = DEFAULT_PATH_KEY;
  }
  const values: Record<string, string | null> = {};
  if (storedKey && storedKey !== key) values[storedKey] = null;
  if (path === null) {
    Object.assign(values, { [key]: null, instructionsBundleMode: null });
  } else {
    Object.assign(values, { [key]: externalPath(path, agent.adapterConfig.cwd), instructionsBundleMode: 'external' });
  }
  await ctx.db.query('update instruction_bundles set adapter_config_key = $2, updated_at = clock_timestamp() where agent_id = $1', [agent.agentId, path === null ? storedKey : key]);
  await ctx.agents.setInstructionKeys(agent.agentId, values);
  recordActivity(ctx, { action: 'agent.instructions_path_updated', entityType: 'agent', entityId: agent.agentId, details: { adapterConfigKey: key, external: path !== null } });
}

/** The agent (404), after the caller's right to its instructions (403). */
async function managedAgent(ctx: RuntimeContext, agentId: string): Promise<AgentConfigView> {
  const agent = await agentConfig(ctx, agentId);
  await assertMayManage(ctx, agentId);
  return agent;
}

function assertManaged(agent: AgentConfigView, bundle: Row | undefined): void {
  const external = externalOf(agent, bundle);
  if (external) {
    throw new PluginError(409, 'instructions_external', `The agent's instructions are the external file ${external.path} (adapterConfig.${external.key}); Keel keeps no copy of it. Switch the bundle to managed to keep files here.`, { adapterConfigKey: external.key });
  }
}

export async function instructionsPathRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agent = await managedAgent(ctx, req.params.agentId!);
  const body = req.body as { path: string | null; adapterConfigKey?: string | null };
  await setExternal(ctx, agent, body.path, body.adapterConfigKey);
  return bundleView(ctx, await agentConfig(ctx, agent.agentId));
}

export async function getBundleRoute(req: RouteRequest, ctx: RuntimeContext) {
  return bundleView(ctx, await managedAgent(ctx, req.params.agentId!));
}

export async function patchBundleRoute(req: RouteRequest, ctx: RuntimeContext) {
  let agent = await managedAgent(ctx, req.params.agentId!);
  const body = req.body as { mode?: 'managed' | 'external'; entryFile?: string; path?: string; adapterConfigKey?: string | null };
  if (body.entryFile !== undefined) {
    const entryFile = bundlePath(body.entryFile, 'entryFile');
    await ensureBundleRow(ctx, agent.agentId);
    await ctx.db.query('update instruction_bundles set entry_file = $2, updated_at = clock_timestamp() where agent_id = $1', [agent.agentId, entryFile]);
  }
  if (body.mode === 'external') {
    if (body.path === undefined) throw new PluginError(422, 'instructions_path_required', 'An external bundle needs its path (path, absolute or relative to adapterConfig.cwd)', { field: 'path' });
    await setExternal(ctx, agent, body.path, body.adapterConfigKey);
  } else if (body.mode === 'managed' && externalOf(agent, await bundleRow(ctx, agent.agentId))) {
    await setExternal(ctx, agent, null, undefined);
  }
  if (body.mode !== undefined) agent = await agentConfig(ctx, agent.agentId);
  recordActivity(ctx, { action: 'agent.instructions_bundle_updated', entityType: 'agent', entityId: agent.agentId, details: { mode: body.mode ?? null, entryFile: body.entryFile ?? null } });
  return bundleView(ctx, agent);
}

function queryPath(req: RouteRequest): string {
  return bundlePath(req.query.path);
}

export async function getFileRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agent = await managedAgent(ctx, req.params.agentId!);
  const path = queryPath(req);
  const bundle = await bundleRow(ctx, agent.agentId);
  assertManaged(agent, bundle);
  const { rows } = await ctx.db.query('select * from instruction_files where agent_id = $1 and path = $2', [agent.agentId, path]);
  const file = rows[0];
  if (!file) throw new PluginError(404, 'file_not_found', `The bundle has no file ${path}`, { path });
  return fileJson(file, String(bundle?.entry_file ?? DEFAULT_ENTRY_FILE), true);
}

function fileJson(row: Row, entryFile: string, withContent: boolean) {
  return {
    path: row.path, size: Number(row.size_bytes), isEntryFile: row.path === entryFile, editable: true,
    createdAt: row.created_at, updatedAt: row.updated_at, ...(withContent ? { content: row.content } : {}),
  };
}

export async function putFileRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agent = await managedAgent(ctx, req.params.agentId!);
  const body = req.body as { content: string; path?: string };
  if (req.query.path !== undefined && body.path !== undefined && req.query.path !== body.path) {
    throw new PluginError(422, 'invalid_path', 'The path of the query and of the body differ', { field: 'path' });
  }
  const path = bundlePath(req.query.path ?? body.path);
  const bundle = await ensureBundleRow(ctx, agent.agentId);
  assertManaged(agent, bundle);
  const { rows: sizes } = await ctx.db.query(
    `select octet_length($2)::int as size,
            (select count(*)::int from instruction_files where agent_id = $1 and path <> $3) as others,
            (select coalesce(sum(size_bytes), 0)::int from instruction_files where agent_id = $1 and path <> $3) as other_bytes`,
    [agent.agentId, body.content, path]);
  const { size, others, other_bytes: otherBytes } = sizes[0]! as { size: number; others: number; other_bytes: number };
  if (size > MAX_FILE_BYTES) throw new PluginError(413, 'file_too_large', `A bundle file holds at most ${MAX_FILE_BYTES} bytes`, { limit: MAX_FILE_BYTES, size });
  if (others + 1 > MAX_BUNDLE_FILES) throw new PluginError(422, 'bundle_full', `A bundle holds at most ${MAX_BUNDLE_FILES} files`, { limit: MAX_BUNDLE_FILES });
  if (otherBytes + size > MAX_BUNDLE_BYTES) throw new PluginError(413, 'bundle_too_large', `A bundle holds at most ${MAX_BUNDLE_BYTES} bytes in all`, { limit: MAX_BUNDLE_BYTES });
  const { rows } = await ctx.db.query(
    `insert into instruction_files (agent_id, company_id, path, content, size_bytes) values ($1, $2, $3, $4, $5)
     on conflict (agent_id, path) do update set content = excluded.content, size_bytes = excluded.size_bytes, updated_at = clock_timestamp()
     returning *, (xmax = 0) as created`,
    [agent.agentId, ctx.invocation.companyId, path, body.content, size]);
  const file = rows[0]!;
  recordActivity(ctx, { action: 'agent.instructions_file_written', entityType: 'agent', entityId: agent.agentId, details: { path, size } });
  return respond(file.created ? 201 : 200, fileJson(file, String(bundle.entry_file), true));
}

export async function deleteFileRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agent = await managedAgent(ctx, req.params.agentId!);
  const path = queryPath(req);
  const bundle = await bundleRow(ctx, agent.agentId);
  assertManaged(agent, bundle);
  const { rows } = await ctx.db.query('delete from instruction_files where agent_id = $1 and path = $2 returning path', [agent.agentId, path]);
  if (!rows[0]) throw new PluginError(404, 'file_not_found', `The bundle has no file ${path}`, { path });
  recordActivity(ctx, { action: 'agent.instructions_file_deleted', entityType: 'agent', entityId: agent.agentId, details: { path } });
  return { deleted: true, path };
}

/**
 * What a process run gets of its agent's instructions: a managed bundle's files, written under
 * `.keel/instructions/` of its working directory, with `SERVICE_INSTRUCTIONS_FILE` naming the
 * entry file (relative to that directory) when it exists; or the external path as it is
 * recorded (the process reads it itself).
 */
export async function instructionsForRun(ctx: RuntimeContext, agent: AgentConfigView): Promise<{ files: Array<{ path: string; content: string }>; env: Record<string, string> }> {
  const bundle = await bundleRow(ctx, agent.agentId);
  const external = externalOf(agent, bundle);
  if (external) return { files: [], env: { SERVICE_INSTRUCTIONS_FILE: external.path } };
  const { rows } = await ctx.db.query('select path, content from instruction_files where agent_id = $1 order by path', [agent.agentId]);
  if (rows.length === 0) return { files: [], env: {} };
  const entryFile = String(bundle?.entry_file ?? DEFAULT_ENTRY_FILE);
  const env: Record<string, string> = { SERVICE_INSTRUCTIONS_DIR: MATERIALISED_DIR };
  if (rows.some((row) => row.path === entryFile)) env.SERVICE_INSTRUCTIONS_FILE = `${MATERIALISED_DIR}/${entryFile}`;
  return { files: rows.map((row) => ({ path: `${MATERIALISED_DIR}/${String(row.path)}`, content: String(row.content) })), env };
}
