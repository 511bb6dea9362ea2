import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { CallbackUrls } from '../../sdk/capabilities/executions.ts';
import type { Database } from '../db/database.ts';
import type { AgentHomes } from './agent-homes.ts';
import type { AgentIdentity, WorkDirectories } from './agent-user.ts';
import { heldLineChars, type ExecutionLog } from './execution-log.ts';
import { LIVE, PROCESS_RUNNING, type Finish, type Live } from './execution-rows.ts';
import { handToAgentUser, type PreparedWorkspace } from './leased-workspace.ts';
import { AgentProcess } from './process-runner.ts';
import { processEnvironment, type ProcessConfig } from './start-checks.ts';
import type { ToolLaunch } from './tool-launch.ts';

/** A process start as the executor prepared it (everything refusable was checked). */
export interface PreparedProcess {
  kind: 'process'; config: ProcessConfig; env: Record<string, string>; extras: Record<string, string>;
  files: Array<{ path: string; content: Buffer }>; workspace: PreparedWorkspace | null; tool: ToolLaunch | null;
}

/** What running a process needs of the executor. */
export interface ProcessRunDeps {
  db: Database; identity: AgentIdentity; workDirs: WorkDirectories; homes: AgentHomes; urls: CallbackUrls;
  /** The executor's deadline action (SIGTERM, then SIGKILL after grace). */
  timeOut(entry: Live): void;
}

/**
 * One process execution from its files to its exit: the working directory (a leased one, the
 * configured cwd, a folder of the agent's home for a tool launch, or the run's own), the
 * environment built from scratch, the process as the agent user in its PID namespace, its
 * deadline, and a tool launch's one fresh retry when the tool refuses to resume.
 */
export async function runProcessExecution(deps: ProcessRunDeps, entry: Live, prepared: PreparedProcess, token: string, log: ExecutionLog, created: (dir: string) => void): Promise<Partial<Finish>> {
  const { identity } = deps;
  const runDir = await deps.workDirs.create(entry.ref.executionId);
  created(runDir);
  const tool = prepared.tool;
  // A leased directory (leased-workspace.ts) before the configured cwd; then a tool launch's
  // folder of the agent's home (the same on every run); else the run's own.
  const inHome = !prepared.workspace && !prepared.config.cwd && tool?.home?.workdir ? tool.home.workdir : null;
  // Files for a folder of the home are the agent's to receive: written with the home's, by the agent user.
  const home = tool?.home ? await deps.homes.prepare(entry.ref.agentId, inHome
    ? { ...tool.home, files: [...tool.home.files, ...prepared.files.map((file) => ({ ...file, path: join(inHome, file.path) }))] }
    : tool.home) : null;
  const cwd = prepared.workspace?.dir ?? prepared.config.cwd ?? (home && inHome ? join(home, inHome) : runDir);
  if (!inHome) {
    for (const file of prepared.files) {
      const target = join(cwd, file.path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, file.content, { mode: 0o600 });
      await deps.workDirs.own(target);
    }
  }
  // Handed over only now: nothing of the agent user's can be in it while the kernel writes there.
  if (prepared.workspace) await handToAgentUser(prepared.workspace.dir, identity);
  // Withheld names (the provider keys of a run the model gateway serves) reach the process from nowhere.
  const workspaceEnv = Object.fromEntries(Object.entries(prepared.workspace?.env ?? {}).filter(([name]) => !tool?.withhold.has(name)));
  const env = processEnvironment({
    // The agent's own (board-approved) variables win over its environment's.
    home: home ?? runDir, tmp: runDir, resolved: { ...workspaceEnv, ...prepared.env }, extras: prepared.extras,
    defaults: home && tool?.home ? Object.fromEntries(Object.entries(tool.home.variables).map(([name, path]) => [name, join(home, path)])) : {},
    tokens: Object.fromEntries((tool?.tokenVariables ?? []).map((name) => [name, token])),
    canonical: {
      SERVICE_API_URL: deps.urls.apiUrl, SERVICE_API_KEY: token, SERVICE_LLM_URL: deps.urls.llmUrl, SERVICE_COMPANY_ID: entry.ref.companyId,
      SERVICE_AGENT_ID: entry.ref.agentId, SERVICE_RUN_ID: entry.ref.runId,
    },
  });
  // A tool launch's retryOnce watches the output for what the tool says when it refuses a resume.
  let refusal = false;
  const output = tool?.retry ? watchedOutput(log, tool.retry.needles, () => { refusal = true; }) : log;
  const spawnAttempt = (args: string[]) => new AgentProcess({
    command: prepared.config.command, args, cwd, env, stdin: tool?.stdin ?? null,
    uid: identity.separate ? identity.uid : undefined, gid: identity.separate ? identity.gid : undefined,
    pidNamespace: identity.pidNamespaces,
  }, output, { holdChars: heldLineChars(log.mask) });
  let child = spawnAttempt(prepared.config.args);
  entry.process = child;
  if (child.pid) {
    await deps.db.exec(PROCESS_RUNNING, [child.pid, prepared.config.timeoutSec, entry.ref.executionId]);
  }
  // A cancel that arrived while the process was being spawned.
  if (entry.cancelReason) child.stop(entry.graceSec);
  let timer: NodeJS.Timeout | null = null;
  if (prepared.config.timeoutSec !== null) {
    timer = setTimeout(() => deps.timeOut(entry), prepared.config.timeoutSec * 1000);
  }
  let result = await child.done;
  if (tool?.retry && refusal && result.exitCode !== 0 && !result.spawnError && !entry.cancelReason && !entry.timedOut) {
    log.line('system', `exited with code ${result.exitCode} refusing to resume its session: starting it once more with a fresh session`);
    entry.attempts = 2;
    child = spawnAttempt(tool.retry.args);
    entry.process = child;
    if (child.pid) await deps.db.exec(`update executions set pid = ? where id = ? and ${LIVE}`, [child.pid, entry.ref.executionId]);
    if (entry.cancelReason || entry.timedOut) child.stop(entry.graceSec);
    result = await child.done;
  }
  if (timer) clearTimeout(timer);
  if (entry.timedOut) log.line('system', `timed out after ${prepared.config.timeoutSec} s`);
  if (result.spawnError) {
    log.line('system', `could not start ${prepared.config.command}: ${result.spawnError}`);
    return { errorCode: 'spawn_failed', failed: true };
  }
  log.line('system', result.signal ? `ended by ${result.signal}` : `exited with code ${result.exitCode}`);
  return { exitCode: result.exitCode, signal: result.signal, failed: result.exitCode !== 0 };
}

/** An execution's output that also reports a line containing one of the needles (retryOnce). */
function watchedOutput(log: ExecutionLog, needles: string[], seen: () => void): ConstructorParameters<typeof AgentProcess>[1] {
  return {
    line: (stream, text, omitted) => {
      if (needles.some((needle) => text.includes(needle))) seen();
      log.line(stream, text, omitted);
    },
    raw: (stream, text) => log.raw(stream, text),
    ready: () => log.ready(),
  };
}
