import type { HttpExecutionInput, ProcessExecutionInput } from '../../sdk/capabilities/executions.ts';
import { MAX_EXECUTION_FILE_BYTES } from '../../sdk/capabilities/executions.ts';
import type { KeelConfig } from '../config/schema.ts';
import type { Database, Row } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { ServedHosts } from '../http/served-hosts.ts';
import type { ResolvedAddress } from '../net/http-exchange.ts';
import { isSecretRef } from '../tenancy/agent-config.ts';
import { resolveRunEnvironment } from '../vault/run-environment.ts';
import type { Vault } from '../vault/vault.ts';
import type { AgentIdentity } from './agent-user.ts';
import { assertInstanceAddress, checkConnectAddress } from './configured-addresses.ts';
import { credentialHeaderValues } from './credential-mask.ts';
import type { ExecutionCaller } from './execution-rows.ts';
import { assertUnderConfiguredUrl } from './http-runner.ts';
import { prepareLeasedWorkspace } from './leased-workspace.ts';
import type { PreparedProcess } from './process-execution.ts';
import type { RemoteRunSpec, RemoteStopRecipe } from './remote-run.ts';
import { assertPluginExtras, processConfig, safeRelativePath } from './start-checks.ts';
import { assertToolExtras, prepareToolLaunch, toolProcessConfig } from './tool-launch.ts';

const DEFAULT_HTTP_TIMEOUT_MS = 120_000;

/** What preparing a start reads: the database, the vault, the configuration, the names this instance answers to and the agent user. */
export interface PrepareDeps { db: Database; vault: Vault; config: KeelConfig; servedHosts: ServedHosts | null; agentUser(): AgentIdentity }

/** `secretValues`: the credentials the start hands to the run besides its token (masked in its output). */
export type Prepared = { secretValues: string[] } & (
  | PreparedProcess
  | { kind: 'http'; url: URL; addresses: ResolvedAddress[]; method: string; headers: Record<string, string>; body: Buffer | null; sse: boolean; timeoutMs: number; tokenHeader: string;
    secretHeaders: Record<string, string>; remote: RemoteRunSpec['follow'] | null; notes: string[];
    /** What the stop of a remote run needs again after this process is gone (never a secret value). */
    stopRecipe: Omit<RemoteStopRecipe, 'url'> });

/** Everything that can be refused is checked before the row exists: configuration, secrets, files, address. */
export async function prepareExecution(deps: PrepareDeps, caller: ExecutionCaller, input: ProcessExecutionInput | HttpExecutionInput, agent: Row, toolLaunch: boolean): Promise<Prepared> {
  if (input.kind === 'process') {
    const config = toolLaunch ? toolProcessConfig(agent.adapter_config, input.args ?? []) : processConfig(agent.adapter_config);
    const extras = input.env ?? {};
    if (toolLaunch) assertToolExtras(extras);
    else assertPluginExtras(extras);
    const tool = toolLaunch ? prepareToolLaunch(input) : null;
    const files = (input.files ?? []).map((file) => ({ path: safeRelativePath(file.path), content: Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8') }));
    const fileBytes = [...files, ...(tool?.home?.files ?? [])].reduce((sum, file) => sum + file.content.length, 0);
    if (fileBytes > MAX_EXECUTION_FILE_BYTES) throw new KeelError(400, 'invalid_arguments', `files: ${fileBytes} bytes in all; at most ${MAX_EXECUTION_FILE_BYTES}`);
    const workspace = await prepareLeasedWorkspace({ db: deps.db, vault: deps.vault, identity: deps.agentUser },
      { plugin: caller.plugin, runId: input.runId, agentId: agent.id, companyId: agent.company_id }, agent.adapter_config, input.workspace);
    const resolved = await resolveRunEnvironment(deps.db, deps.vault, agent as never, tool?.withhold);
    if (resolved.secrets.length > 0) {
      await deps.db.query(
        `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?, ?::jsonb)`,
        [agent.company_id, `plugin:${caller.plugin}`, agent.id, input.runId, JSON.stringify({ plugin: caller.plugin, execution: true, secrets: resolved.secrets })]);
    }
    const secretValues = [
      ...resolved.secrets.map((secret) => resolved.env[secret.envName]!),
      ...(workspace?.secrets ?? []).filter((secret) => !tool?.withhold.has(secret.envName)).map((secret) => workspace!.env[secret.envName]!),
    ];
    return { kind: 'process', config, env: resolved.env, extras, files, workspace, secretValues, tool };
  }
  const config = (agent.adapter_config ?? {}) as Record<string, unknown>;
  const configured = config[input.baseUrlKey ?? 'url'];
  const url = assertUnderConfiguredUrl(input.url, configured);
  const addresses = await checkConnectAddress(url, deps.config, caller.plugin);
  // The address the remote side is handed as Keel's (it calls back with the run token): this instance only.
  const instanceUrl = input.instanceUrlKey ? config[input.instanceUrlKey] : undefined;
  if (instanceUrl !== undefined && instanceUrl !== null) assertInstanceAddress(instanceUrl, deps.servedHosts, input.instanceUrlKey!);
  let remote: RemoteRunSpec['follow'] | null = null;
  if (input.remoteRun) {
    const follow = input.remoteRun;
    // Each template must stay under the configured base whatever the run server names its run.
    for (const template of [follow.eventsUrl, follow.statusUrl, follow.stopUrl]) assertUnderConfiguredUrl(template.replaceAll('{id}', 'run-id'), configured);
    remote = {
      eventsUrl: follow.eventsUrl, statusUrl: follow.statusUrl, stopUrl: follow.stopUrl, reconnectMs: follow.reconnectMs,
      terminalEvents: follow.terminalEvents, idFields: typeof follow.idField === 'string' ? [follow.idField] : follow.idField ?? ['id'], createAttempts: follow.createAttempts ?? 3,
    };
  }
  const secretValues: string[] = [];
  const secretHeaders = await secretHeadersFor(deps, caller, input.secretHeaders ?? [], input.runId, agent, config, secretValues);
  const tokenHeader = (input.tokenHeader ?? 'authorization').toLowerCase();
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) {
    const lower = name.toLowerCase();
    if (!/^[a-z0-9-]{1,100}$/.test(lower) || /[\r\n\0]/.test(value)) throw new KeelError(400, 'invalid_arguments', `headers: ${JSON.stringify(name.slice(0, 100))} is not a valid header`);
    if (['host', 'content-length', 'transfer-encoding', 'connection', tokenHeader].includes(lower)) continue;
    headers[lower] = value;
  }
  secretValues.push(...credentialHeaderValues(headers));
  const body = input.body === undefined ? null : Buffer.from(JSON.stringify(input.body));
  if (body) headers['content-type'] = 'application/json';
  if (input.stream === 'sse') headers.accept = 'text/event-stream';
  return {
    kind: 'http', url, addresses, method: input.method ?? 'POST', headers, body, sse: input.stream === 'sse',
    timeoutMs: Math.min(input.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS, 24 * 3600 * 1000), tokenHeader, secretHeaders, remote,
    stopRecipe: { headers: Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'content-type' && name !== 'idempotency-key')), secretHeaders: input.secretHeaders ?? [], baseUrlKey: input.baseUrlKey ?? 'url' },
    notes: (input.notes ?? []).map((note) => note.replace(/[\r\n]+/g, ' ')), secretValues,
  };
}

/**
 * The headers whose values are secrets of the agent's configuration (a secret reference,
 * revealed here; the isolate never sees the value). A value that cannot be resolved refuses
 * the start. Which secrets were read is written to the security audit log, never the values;
 * the values themselves are added to `revealed` (to be masked in the run's output).
 */
export async function secretHeadersFor(deps: Pick<PrepareDeps, 'db' | 'vault'>, caller: ExecutionCaller, specs: NonNullable<HttpExecutionInput['secretHeaders']>, runId: string, agent: Row, config: Record<string, unknown>, revealed: string[] = []): Promise<Record<string, string>> {
  const headers: Record<string, string> = {};
  const used: Array<{ header: string; configKey: string; secretId: string | null; version: number | null }> = [];
  for (const entry of specs) {
    const stored = config[entry.configKey];
    let value: string;
    if (isSecretRef(stored)) {
      const selector = stored.version === undefined || stored.version === 'latest' ? 'latest' : stored.version;
      let revealed;
      try { revealed = await deps.vault.reveal(deps.db, agent.company_id, stored.secretId, selector); } catch (error) {
        throw new KeelError(422, 'secret_ref_unresolvable', `Cannot resolve adapterConfig.${entry.configKey}: ${error instanceof Error ? error.message : 'unknown secret'}`, { details: { path: `adapterConfig.${entry.configKey}` } });
      }
      value = revealed.value;
      used.push({ header: entry.header.toLowerCase(), configKey: entry.configKey, secretId: stored.secretId, version: revealed.version });
    } else if (typeof stored === 'string' && stored.length > 0) {
      value = stored;
      used.push({ header: entry.header.toLowerCase(), configKey: entry.configKey, secretId: null, version: null });
    } else {
      throw new KeelError(409, 'adapter_config_invalid', `The agent's adapterConfig has no ${entry.configKey} for the ${entry.header} header`);
    }
    if (/[\r\n\0]/.test(value)) throw new KeelError(409, 'adapter_config_invalid', `adapterConfig.${entry.configKey} cannot be sent in a header`);
    headers[entry.header.toLowerCase()] = entry.scheme ? `${entry.scheme} ${value}` : value;
    revealed.push(value);
  }
  if (used.length > 0) {
    await deps.db.query(
      `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?, ?::jsonb)`,
      [agent.company_id, `plugin:${caller.plugin}`, agent.id, runId, JSON.stringify({ plugin: caller.plugin, execution: true, headers: used })]);
  }
  return headers;
}

/** secretHeadersFor with its dependencies bound (the stop of a lost remote run reveals them again). */
export type SecretHeaders = (caller: ExecutionCaller, specs: NonNullable<HttpExecutionInput['secretHeaders']>, runId: string, agent: Row, config: Record<string, unknown>) => Promise<Record<string, string>>;
