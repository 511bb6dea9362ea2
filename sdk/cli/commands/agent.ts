import { CliError, clientFor, companyIdFor, emit, emitList, emitRecord, type Column, type GlobalOptions } from '../output.ts';
import { agentId, path, resolveAgent } from './agent-ref.ts';
import { parsePayload, validatePayload } from './payload.ts';

/**
 * The agent group of the command-line client: one command per row of the API's agent table.
 * With --json each prints the server's answer as sent (docs/api/agents.md, docs/api/runtime.md).
 */
const AGENT_COLUMNS: Column[] = ['id', 'name', 'urlKey', 'role', 'status', 'adapterType'];
const INBOX_COLUMNS: Column[] = ['identifier', 'priority', 'status', 'title', 'updatedAt'];

type Options = GlobalOptions & Record<string, any>;

export async function meCommand(options: Options): Promise<void> {
  emitRecord(options, await clientFor(options).get('/api/agents/me'));
}

export async function inboxCommand(options: Options): Promise<void> {
  const items = await clientFor(options).get<unknown[]>('/api/agents/me/inbox-lite');
  emitList(options, items, INBOX_COLUMNS, 'Inbox is empty');
}

export async function inboxMineCommand(options: Options): Promise<void> {
  if (!options.userId) throw new CliError('usage', 'agent inbox-mine needs --user-id <id>');
  const items = await clientFor(options).get<unknown[]>('/api/agents/me/inbox/mine', { userId: options.userId, status: options.status, limit: options.limit });
  emitList(options, items, INBOX_COLUMNS, 'No inbox items');
}

export async function listCommand(options: Options): Promise<void> {
  const agents = await clientFor(options).get<unknown[]>(path`/api/companies/${companyIdFor(options)}/agents`);
  emitList(options, agents, AGENT_COLUMNS, 'No agents');
}

export async function getCommand(ref: string, options: Options): Promise<void> {
  emitRecord(options, await resolveAgent(clientFor(options), ref, options));
}

/** create and hire: the payload is checked against the server's own schema before it is sent. */
export async function createCommand(options: Options): Promise<void> {
  await createOrHire('agents', options);
}

export async function hireCommand(options: Options): Promise<void> {
  await createOrHire('agent-hires', options);
}

async function createOrHire(route: 'agents' | 'agent-hires', options: Options): Promise<void> {
  const companyId = companyIdFor(options);
  const payload = parsePayload(options.payloadJson);
  const client = clientFor(options);
  await validatePayload(client, 'POST', `/api/companies/{companyId}/${route}`, payload);
  const answer = await client.create<Record<string, any>>(path`/api/companies/${companyId}/${route}`, payload);
  const agent = route === 'agents' ? answer : answer.agent;
  const approval = route === 'agents' ? null : answer.approval;
  const lines = [`${route === 'agents' ? 'Created' : 'Hired'} agent ${agent.name} (${agent.id}), status ${agent.status}`];
  if (approval) lines.push(`Waiting for board approval ${approval.id}: keel approval approve ${approval.id}`);
  emit(options, lines, answer);
}

export async function updateCommand(ref: string, options: Options): Promise<void> {
  const payload = parsePayload(options.payloadJson);
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  await validatePayload(client, 'PATCH', '/api/agents/{agentId}', payload);
  const agent = await client.patch<Record<string, any>>(path`/api/agents/${id}`, payload);
  emit(options, `Updated agent ${agent.name} (${agent.id})`, agent);
}

export async function deleteCommand(ref: string, options: Options): Promise<void> {
  if (!options.yes) throw new CliError('confirmation_required', `Deleting an agent removes it and its history for good; run again with --yes to delete ${ref}`);
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  const answer = await client.delete(path`/api/agents/${id}`);
  emit(options, `Deleted agent ${id}`, answer);
}

/** pause, resume, approve, terminate: the agent as it is afterwards. */
export function lifecycleCommand(action: 'pause' | 'resume' | 'approve' | 'terminate') {
  return async (ref: string, options: Options): Promise<void> => {
    const client = clientFor(options);
    const id = await agentId(client, ref, options);
    const body = action === 'pause' && options.reason ? { reason: options.reason } : {};
    const agent = await client.post<Record<string, any>>(path`/api/agents/${id}/${action}`, body);
    emit(options, `${agent.name} (${agent.id}) is now ${agent.status}`, agent);
  };
}

export const pauseCommand = lifecycleCommand('pause');
export const resumeCommand = lifecycleCommand('resume');
export const approveCommand = lifecycleCommand('approve');
export const terminateCommand = lifecycleCommand('terminate');

function wakeLines(answer: Record<string, any>): string[] {
  const run = answer.run ?? {};
  return [`Wakeup ${answer.status}: run ${run.id ?? '-'} (${run.status ?? 'unknown'})`, ...(run.id ? [`Follow it with: keel run follow ${run.id}`] : [])];
}

export async function wakeCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  const body: Record<string, unknown> = {};
  if (options.source) body.source = options.source;
  if (options.trigger) body.triggerDetail = options.trigger;
  if (options.reason) body.reason = options.reason;
  if (options.payloadJson !== undefined) body.payload = parsePayload(options.payloadJson);
  if (options.forceFreshSession) body.forceFreshSession = true;
  // The key (given, or fresh for this wakeup) goes as the Idempotency-Key header: a retry gives back the same wakeup.
  const answer = await client.create<Record<string, any>>(path`/api/agents/${id}/wakeup`, body, { idempotencyKey: options.idempotencyKey });
  emit(options, wakeLines(answer), answer);
}

export async function heartbeatInvokeCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  const answer = await client.create<Record<string, any>>(path`/api/agents/${id}/heartbeat/invoke`, {});
  emit(options, wakeLines(answer), answer);
}

export async function vendorLoginCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  emitRecord(options, await client.post(path`/api/agents/${id}/alpha-login`, {}));
}

interface EnvironmentCheck { name: string; ok: boolean; message: string; fix: string | null }

/**
 * The environment test (POST /api/agents/{agentId}/adapter-test): each check, ok or failed, with
 * its message and, for a failed one, its fix. Exits 1 when a check failed, like `run follow` for
 * a run that did not succeed, so a script can test an agent before it wakes it.
 */
export async function testCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  const answer = await client.post<{ ok: boolean; adapterType: string; version: string | null; checks: EnvironmentCheck[] }>(path`/api/agents/${id}/adapter-test`, {});
  const width = Math.max(0, ...answer.checks.map((check) => check.name.length));
  const lines = [`Environment of agent ${id} (${answer.adapterType}${answer.version ? ` ${answer.version}` : ''}): ${answer.ok ? 'ok' : 'failed'}`];
  for (const check of answer.checks) {
    lines.push(`  ${(check.ok ? 'ok' : 'failed').padEnd(6)}  ${check.name.padEnd(width)}  ${check.message}`);
    if (check.fix && !check.ok) lines.push(`  ${''.padEnd(6)}  ${''.padEnd(width)}  fix: ${check.fix}`);
  }
  emit(options, lines, answer);
  if (!answer.ok || answer.checks.some((check) => !check.ok)) process.exitCode = 1;
}

function booleanFlag(name: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new CliError('usage', `${name} takes true or false, got ${JSON.stringify(value)}`);
}

export async function permissionsUpdateCommand(ref: string, options: Options): Promise<void> {
  const body = options.payloadJson !== undefined ? parsePayload(options.payloadJson) : {
    canCreateAgents: booleanFlag('--can-create-agents', options.canCreateAgents),
    canAssignTasks: booleanFlag('--can-assign-tasks', options.canAssignTasks),
  };
  const client = clientFor(options);
  const id = await agentId(client, ref, options);
  const agent = await client.patch<Record<string, any>>(path`/api/agents/${id}/permissions`, body);
  emit(options, `Permissions of ${agent.name}: ${JSON.stringify(agent.permissions ?? {})}`, agent);
}

export async function configurationCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  emitRecord(options, await client.get(path`/api/agents/${await agentId(client, ref, options)}/configuration`));
}

export async function configRevisionsCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const revisions = await client.get<unknown[]>(path`/api/agents/${await agentId(client, ref, options)}/config-revisions`);
  emitList(options, revisions, ['revisionNumber', 'id', 'source', 'changedKeys', 'createdAt'], 'No configuration revisions');
}

export async function configRevisionGetCommand(ref: string, revisionId: string, options: Options): Promise<void> {
  const client = clientFor(options);
  emitRecord(options, await client.get(path`/api/agents/${await agentId(client, ref, options)}/config-revisions/${revisionId}`));
}

export async function configRevisionRollbackCommand(ref: string, revisionId: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const agent = await client.post<Record<string, any>>(path`/api/agents/${await agentId(client, ref, options)}/config-revisions/${revisionId}/rollback`, {});
  emit(options, `Rolled ${agent.name} back to revision ${revisionId}`, agent);
}

export async function runtimeStateCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  emitRecord(options, await client.get(path`/api/agents/${await agentId(client, ref, options)}/runtime-state`));
}

export async function resetSessionCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const answer = await client.post<Record<string, any>>(path`/api/agents/${await agentId(client, ref, options)}/runtime-state/reset-session`, options.taskKey ? { taskKey: options.taskKey } : {});
  emit(options, `Cleared sessions: ${(answer.clearedTaskKeys ?? []).join(', ') || 'none'}`, answer);
}

export async function taskSessionsCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const sessions = await client.get<unknown[]>(path`/api/agents/${await agentId(client, ref, options)}/task-sessions`);
  emitList(options, sessions, ['taskKey', 'adapterType', 'sessionId', 'lastRunId', 'updatedAt'], 'No task sessions');
}

export async function skillsCommand(ref: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const snapshot = await client.get<Record<string, any>>(path`/api/agents/${await agentId(client, ref, options)}/skills`);
  emitList(options, Array.isArray(snapshot.entries) ? snapshot.entries : [], ['key', 'desired', 'state', 'origin', 'required'], 'No skills', snapshot);
}

export async function skillsSyncCommand(ref: string, options: Options): Promise<void> {
  if (options.desiredSkills === undefined) throw new CliError('usage', 'agent skills:sync needs --desired-skills <csv> (an empty string keeps only the required skills)');
  const desiredSkills = String(options.desiredSkills).split(',').map((s) => s.trim()).filter(Boolean);
  const client = clientFor(options);
  const snapshot = await client.post<Record<string, any>>(path`/api/agents/${await agentId(client, ref, options)}/skills/sync`, { desiredSkills });
  emitList(options, Array.isArray(snapshot.entries) ? snapshot.entries : [], ['key', 'desired', 'state', 'origin', 'required'], 'No skills', snapshot);
}
