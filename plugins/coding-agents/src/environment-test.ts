import { PluginError } from '@keel/sdk/plugin';
import { localConfig } from './config.ts';
import type { CodingAgentsContext } from './context.ts';
import { gatewayRoute } from './gateway.ts';
import type { ProbeOutcome, ToolDriver } from './tools/driver.ts';
import { driverFor } from './tools/index.ts';
import { unavailable } from './start.ts';

interface Check { name: string; ok: boolean; message: string; fix: string | null }

async function agentDriver(ctx: CodingAgentsContext, agentId: string) {
  const agent = await ctx.agents.getConfig(agentId);
  if (!agent) throw new PluginError(404, 'not_found', 'Agent not found');
  const driver = driverFor(agent.adapterType);
  if (!driver) throw unavailable(agent.adapterType);
  return { agent, driver, config: localConfig(driver, agent.adapterConfig) };
}

const tail = (text: string) => text.trim().split('\n').slice(-5).join('\n').slice(0, 1_000);

/**
 * `adapter-test` (POST /api/agents/{agentId}/adapter-test): before anyone wakes the agent, its
 * tool is started as its runs would start it (the agent user, its home, its environment with
 * its secrets, no run token): the version check, then one minimal model call. Each failed check
 * says what to do about it; a missing tool, the install command.
 */
export async function adapterTestService(input: unknown, ctx: CodingAgentsContext) {
  const { driver, config } = await agentDriver(ctx, (input as { agentId: string }).agentId);
  const agentId = (input as { agentId: string }).agentId;
  const checks: Check[] = [];
  const versionProbe = await ctx.executions.probe({ agentId, args: driver.versionArgs, timeoutSec: 30 });
  // Some tools print their version on stderr (Pi, when its standard input is not a terminal).
  const version = versionProbe.exitCode === 0 ? driver.parseVersion(versionProbe.stdout) ?? driver.parseVersion(versionProbe.stderr) : null;
  if (versionProbe.spawnError) {
    checks.push({ name: 'installed', ok: false, message: `${config.command} could not be started (${versionProbe.spawnError}): ${driver.displayName} is not installed where this instance runs agents, or the agent user cannot run it`, fix: driver.install });
    return { ok: false, adapterType: driver.adapterType, version: null, checks };
  }
  checks.push(version
    ? { name: 'version', ok: true, message: `${driver.displayName} ${version}; supported: ${driver.supportedVersions}`, fix: null }
    : { name: 'version', ok: false, message: `${config.command} ${driver.versionArgs.join(' ')} did not answer a version: ${tail(versionProbe.stderr || versionProbe.stdout) || `exit code ${versionProbe.exitCode}`}`, fix: `Check that adapterConfig.command names ${driver.displayName} (${driver.install})` });
  if (version) checks.push(await modelCall(ctx, agentId, driver, config));
  return { ok: checks.every((check) => check.ok), adapterType: driver.adapterType, version, checks };
}

/** The minimal model call, routed as a run would be: through the model gateway when a provider of the company serves the agent (the probe then runs in a run of its own, whose token the tool presents). */
async function modelCall(ctx: CodingAgentsContext, agentId: string, driver: ToolDriver, stored: ReturnType<typeof localConfig>): Promise<Check> {
  const gateway = await gatewayRoute(ctx, agentId, driver, stored);
  const config = { ...stored, gateway: gateway?.target ?? null };
  const probe = driver.probe(config);
  let outcome: ProbeOutcome;
  try {
    outcome = await ctx.executions.probe({
      agentId, args: probe.args, stdin: probe.stdin, env: { ...probe.env, ...gateway?.routing.env }, homeVariables: probe.homeVariables, timeoutSec: 120,
      ...(probe.homeFiles && probe.homeFiles.length > 0 ? { homeFiles: probe.homeFiles } : {}),
      ...(gateway ? { tokenVariables: gateway.routing.tokenVariables, withholdVariables: gateway.routing.withholdVariables } : {}),
    });
  } catch (error) {
    // A call through the gateway needs a run of the agent, which a paused or held agent cannot have.
    if (gateway && (error as { code?: string }).code === 'agent_not_runnable') {
      return { name: 'model_call', ok: false, message: `agent_not_runnable: the model provider serves this agent through Keel's model gateway, which takes calls of a run only, and the agent cannot run now`, fix: 'Resume the agent, then test again' };
    }
    throw error;
  }
  const failure = outcome.timedOut ? { errorCode: 'timeout', message: `${driver.displayName} did not answer within 120 s` }
    : driver.classify({ exitCode: outcome.exitCode, signal: outcome.signal, logTail: `${outcome.stdout}\n${outcome.stderr}`, sawResult: outcome.exitCode === 0 });
  if (!failure && outcome.exitCode === 0) return { name: 'model_call', ok: true, message: `a minimal ${config.model ?? 'default-model'} call answered`, fix: null };
  const found = failure ?? { errorCode: 'tool_crashed', message: tail(outcome.stderr || outcome.stdout) || `exit code ${outcome.exitCode}` };
  return { name: 'model_call', ok: false, message: `${found.errorCode}: ${found.message}`, fix: FIXES[found.errorCode] ?? 'Read the message above and the tool\'s own documentation' };
}

const FIXES: Record<string, string> = {
  tool_auth_required: 'Give the agent a credential: a secret reference in adapterConfig.env for the tool\'s API key variable (or its login token), or run POST /api/agents/{agentId}/alpha-login for Claude Code',
  tool_rate_limited: 'Wait for the provider\'s limit to reset, or use another key',
  tool_quota_exhausted: 'Add credit or raise the quota with the model provider, or use another key',
  timeout: 'Check that the model provider (or the base URL in adapterConfig.env) is reachable from this machine',
  tool_crashed: 'Run the tool by hand with the same configuration and read its error',
};

/** `adapter-login` (POST /api/agents/{agentId}/alpha-login): the tool's login state and what the operator does next. */
export async function adapterLoginService(input: unknown, ctx: CodingAgentsContext) {
  const agentId = (input as { agentId: string }).agentId;
  const { driver, config } = await agentDriver(ctx, agentId);
  if (!driver.login) throw new PluginError(422, 'login_not_supported', `The adapter ${driver.adapterType} has no login flow`, { adapterType: driver.adapterType });
  const status = driver.login.statusArgs ? await ctx.executions.probe({ agentId, args: driver.login.statusArgs, timeoutSec: 30 }) : null;
  return driver.login.answer({ config, status });
}
