import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { join } from 'node:path';
import type { ProbeInput, ProbeResult } from '../../sdk/capabilities/executions.ts';
import type { Row } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import { resolveRunEnvironment } from '../vault/run-environment.ts';
import { CredentialMask } from './credential-mask.ts';
import type { CallbackUrls } from '../../sdk/capabilities/executions.ts';
import type { Database } from '../db/database.ts';
import type { RunLedger } from '../runs/run-ledger.ts';
import type { Vault } from '../vault/vault.ts';
import type { AgentHomes } from './agent-homes.ts';
import type { AgentIdentity, WorkDirectories } from './agent-user.ts';
import type { ExecutionCaller } from './execution-rows.ts';
import { AgentProcess } from './process-runner.ts';
import { assertBoardApprovedConfig, processEnvironment, safeRelativePath } from './start-checks.ts';
import { assertToolExtras, homeVariables, tokenVariables, toolProcessConfig } from './tool-launch.ts';
import { probeRun } from './probe-run.ts';

/** What a probe keeps of each stream. */
const MAX_PROBE_OUTPUT_CHARS = 65_536;
const DEFAULT_PROBE_SEC = 60;
/** What a probe may write into the home first (a tool's settings, not a skill library). */
const MAX_PROBE_FILE_BYTES = 1_048_576;
/** Probes of one company this process runs at once (each is a process on the machine). */
const MAX_PROBES_PER_COMPANY = 4;
const running = new Map<string, number>();

/**
 * `ctx.executions.probe` (sdk/capabilities/executions.ts): the agent's board-approved command
 * once, outside any run, for the plugin that contributes its adapter type: as the agent user, in
 * its persistent home, with its resolved environment (the secrets it uses audited, and masked in
 * what comes back) but no run token, so a probe cannot act on Keel, unless the plugin names
 * `tokenVariables` (a tool whose model calls go through Keel's model gateway): then a run is
 * opened for the probe (probe-run.ts) and closed when it ends, and only those variables hold its
 * token. Not an execution: nothing is logged or leased; the deadline (at most 300 s) bounds it.
 */
/** What a probe needs of the executor: its stores, the agent user with its directories and homes, and the callback URLs. */
export interface ProbeExecutor {
  deps: { db: Database; vault: Vault; runs: RunLedger; log: Logger };
  workDirectories(): WorkDirectories;
  agentUser(): AgentIdentity;
  agentHomes(): AgentHomes;
  callbackUrls(): CallbackUrls;
}

export async function runProbe(executor: ProbeExecutor, caller: ExecutionCaller, input: ProbeInput): Promise<ProbeResult> {
  const { db, vault } = executor.deps;
  const agent = await db.maybeOne<Row>('select id, company_id, status, adapter_type, adapter_config from agents where id = ? and company_id = ?', [input.agentId.toLowerCase(), caller.companyId]);
  if (!agent) throw new KeelError(404, 'agent_not_found', 'Agent not found');
  if (!caller.contributes?.(agent.adapter_type)) {
    throw new KeelError(409, 'adapter_mismatch', `The agent's adapter is ${agent.adapter_type}, which this plugin does not contribute`);
  }
  if (agent.status === 'terminated') throw new KeelError(409, 'agent_not_runnable', 'The agent is terminated; it cannot be run', { details: { status: agent.status } });
  await assertBoardApprovedConfig(db, agent.id);
  const config = toolProcessConfig(agent.adapter_config, input.args);
  const extras = input.env ?? {};
  assertToolExtras(extras);
  const tokens = tokenVariables(input.tokenVariables);
  const withhold = new Set(input.withholdVariables ?? []);
  const variables = homeVariables(input.homeVariables);
  const files = (input.homeFiles ?? []).map((file) => ({ path: safeRelativePath(file.path), content: Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8') }));
  if (files.reduce((sum, file) => sum + file.content.length, 0) > MAX_PROBE_FILE_BYTES) {
    throw new KeelError(400, 'invalid_arguments', `homeFiles: at most ${MAX_PROBE_FILE_BYTES} bytes in all`);
  }
  if ((running.get(caller.companyId) ?? 0) >= MAX_PROBES_PER_COMPANY) {
    throw new KeelError(429, 'too_many_probes', `A company runs at most ${MAX_PROBES_PER_COMPANY} adapter tests at once; wait for one to end`);
  }
  running.set(caller.companyId, (running.get(caller.companyId) ?? 0) + 1);
  const dirs = executor.workDirectories();
  let dir: string | null = null;
  let run: Awaited<ReturnType<typeof probeRun>> | null = null;
  let outcome: 'succeeded' | 'failed' = 'failed';
  try {
    const resolved = await resolveRunEnvironment(db, vault, agent as never, withhold);
    if (resolved.secrets.length > 0) {
      await db.query(
        `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?::jsonb)`,
        [agent.company_id, `plugin:${caller.plugin}`, agent.id, JSON.stringify({ plugin: caller.plugin, probe: true, secrets: resolved.secrets })]);
    }
    const identity = executor.agentUser();
    const home = await executor.agentHomes().prepare(agent.id, { variables, replace: [], files });
    dir = await dirs.create(`probe-${randomUUID()}`);
    if (tokens.length > 0) run = await probeRun(executor, caller.plugin, agent, (input.timeoutSec ?? DEFAULT_PROBE_SEC) + 60);
    // The run token is a credential too: what comes back never holds it.
    const mask = new CredentialMask([...resolved.secrets.map((secret) => resolved.env[secret.envName]!), ...(run ? [run.token] : [])]);
    const urls = executor.callbackUrls();
    const env = processEnvironment({
      home, tmp: dir, resolved: resolved.env, extras,
      defaults: Object.fromEntries(Object.entries(variables).map(([name, path]) => [name, join(home, path)])),
      tokens: run ? Object.fromEntries(tokens.map((name) => [name, run!.token])) : {},
      canonical: { SERVICE_API_URL: urls.apiUrl, SERVICE_LLM_URL: urls.llmUrl, SERVICE_COMPANY_ID: agent.company_id, SERVICE_AGENT_ID: agent.id },
    });
    const kept = { stdout: '', stderr: '' };
    // The decoded text as it came (lines are for logs; a probe's answer may not end with one).
    const keep = (stream: 'stdout' | 'stderr', text: string) => {
      if (kept[stream].length < MAX_PROBE_OUTPUT_CHARS) kept[stream] = (kept[stream] + text).slice(0, MAX_PROBE_OUTPUT_CHARS);
    };
    const child = new AgentProcess({
      command: config.command, args: config.args, cwd: config.cwd ?? dir, env, stdin: input.stdin === undefined ? null : Buffer.from(input.stdin, 'utf8'),
      uid: identity.separate ? identity.uid : undefined, gid: identity.separate ? identity.gid : undefined, pidNamespace: identity.pidNamespaces,
    }, { line: () => undefined, raw: (stream, text) => keep(stream, text), ready: () => null }, { holdChars: MAX_PROBE_OUTPUT_CHARS });
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.stop(2); }, (input.timeoutSec ?? DEFAULT_PROBE_SEC) * 1000);
    const result = await child.done;
    clearTimeout(timer);
    outcome = result.exitCode === 0 ? 'succeeded' : 'failed';
    return {
      exitCode: result.exitCode, signal: result.signal, stdout: mask.text(kept.stdout), stderr: mask.text(kept.stderr), timedOut, spawnError: result.spawnError,
    };
  } finally {
    running.set(caller.companyId, (running.get(caller.companyId) ?? 1) - 1);
    if (run) await run.close(outcome).catch((error: unknown) => executor.deps.log.warn({ err: error, runId: run!.runId }, 'could not close the run of a probe'));
    if (dir) await dirs.remove(dir).catch(() => undefined);
  }
}
