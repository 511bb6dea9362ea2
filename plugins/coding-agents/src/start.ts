import { PluginError } from '@keel/sdk/plugin';
import { localConfig } from './config.ts';
import type { CodingAgentsContext } from './context.ts';
import { gatewayRoute } from './gateway.ts';
import { promptFor, type Wake } from './prompt.ts';
import type { RunFile } from './tools/driver.ts';
import { driverFor } from './tools/index.ts';

interface StartInput {
  runId: string; agentId: string; issueId: string | null; taskKey: string; sessionId?: string | null; wake?: Wake;
  /** The agent's instructions (under .keel/instructions/) and skills (.keel/skills/<name>/) as the runtime materialises them. */
  files?: RunFile[]; env?: Record<string, string>; skills?: string[];
}

const INSTRUCTIONS_DIR = '.keel/instructions/';
const SKILLS_DIR = '.keel/skills/';
/** The agent's working folder in its home when its configuration names no cwd. */
const WORKDIR = 'workspace';

/** The install hint of a local adapter type this instance has no driver for. */
export function unavailable(adapterType: string): PluginError {
  return new PluginError(409, 'adapter_unavailable', `This instance has no driver for the adapter ${adapterType}`, { adapterType });
}

/**
 * The `adapter-run` service (the runtime starts a run of a local-adapter agent): the tool's
 * non-interactive run as a tool launch of the kernel. The prompt goes on stdin, the run token
 * stays in the environment (the kernel sets it), the agent's instructions and skills go where
 * the tool reads them (the driver decides: its home's instruction file and skills folder), and
 * the task's session is resumed, with a fresh start in the same run if the tool refuses it.
 * When a model provider of the company serves the run (gateway.ts), the tool's base URL points
 * at Keel's model gateway, its API-key variable holds the run token and the configured provider
 * keys are withheld by the kernel: the tool never holds a provider key.
 */
export async function adapterRunService(input: unknown, ctx: CodingAgentsContext): Promise<{ executionId: string; startedAt: string | null }> {
  const start = input as StartInput;
  const agent = await ctx.agents.getConfig(start.agentId);
  if (!agent) throw new PluginError(404, 'not_found', 'Agent not found');
  const driver = driverFor(agent.adapterType);
  if (!driver) throw unavailable(agent.adapterType);
  const stored = localConfig(driver, agent.adapterConfig);
  // Served by a provider of the company through the model gateway, or by the tool's own credentials.
  const gateway = await gatewayRoute(ctx, start.agentId, driver, stored);
  const config = { ...stored, gateway: gateway?.target ?? null };
  const files = start.files ?? [];
  const env = start.env ?? {};
  const skills = (start.skills ?? []).map((runtimeName) => ({
    runtimeName,
    files: files.filter((file) => file.path.startsWith(`${SKILLS_DIR}${runtimeName}/`)).map((file) => ({ ...file, path: file.path.slice(`${SKILLS_DIR}${runtimeName}/`.length) })),
  }));
  const entry = env.SERVICE_INSTRUCTIONS_FILE ?? null;
  const instructions = entry?.startsWith(INSTRUCTIONS_DIR) ? files.find((file) => file.path === entry)?.content ?? null : null;
  const sessionId = start.sessionId ?? null;
  const prompt = await promptFor(ctx, { agentId: start.agentId, issueId: start.issueId, wake: start.wake ?? {}, skills: start.skills ?? [] })
    + (entry && !instructions ? `\nYour instructions are in ${entry}: read them first.\n` : '');
  const launch = driver.launch({ config, sessionId, prompt, instructions, skills });
  const wake = start.wake ?? {};
  const execution = await ctx.executions.start({
    kind: 'process', runId: start.runId,
    env: {
      ...env, ...launch.env, ...gateway?.routing.env,
      SERVICE_WAKE_REASON: typeof wake.reason === 'string' ? wake.reason : '', SERVICE_WAKE_SOURCE: String(wake.source ?? ''),
      SERVICE_WAKE_PAYLOAD_JSON: JSON.stringify(wake.payload ?? {}), SERVICE_TASK_KEY: start.taskKey,
      ...(start.issueId ? { SERVICE_TASK_ID: start.issueId } : {}), ...(sessionId ? { SERVICE_SESSION_ID: sessionId } : {}),
    },
    files: [...files, ...launch.files], args: launch.args, stdin: launch.stdin,
    // Without a configured cwd the agent works in one folder of its home on every run (a tool keeping sessions per folder finds them).
    home: { variables: launch.homeVariables, replace: launch.homeReplace, files: launch.homeFiles, workdir: WORKDIR },
    ...(launch.retryFresh && sessionId ? { retryOnce: launch.retryFresh } : {}),
    ...(gateway ? { tokenVariables: gateway.routing.tokenVariables, withholdVariables: gateway.routing.withholdVariables } : {}),
  });
  await ctx.db.query(
    `insert into tool_runs (run_id, company_id, agent_id, adapter_type, execution_id, session_before, session_id, gateway_provider_id) values ($1, $2, $3, $4, $5, $6, $6, $7)
     on conflict (run_id) do nothing`,
    [start.runId, ctx.invocation.companyId, start.agentId, agent.adapterType, execution.executionId, sessionId, gateway?.target.providerId ?? null]);
  return { executionId: execution.executionId, startedAt: execution.startedAt };
}
