import { PluginError } from '@keel/sdk/plugin';
import { isLoopbackHost, runConfig } from './config.ts';
import { ADAPTER_TYPE, type RemoteRunnerContext } from './context.ts';
import { sessionKey } from './session-key.ts';
import { parseHttpUrl } from './urls.ts';

/** The header that carries the run's token to the run server (out of band, never in the prompt). */
export const TOKEN_HEADER = 'x-service-api-key';
export const SESSION_HEADER = 'x-remote-session-key';
/** Headers the configuration cannot set: authentication, the session, the protocol's own. */
const PROTECTED = new Set([
  'authorization', 'proxy-authorization', 'cookie', SESSION_HEADER, TOKEN_HEADER, 'idempotency-key', 'last-event-id',
  'host', 'content-length', 'content-type', 'accept', 'connection', 'transfer-encoding',
]);
/** Event names whose data carries the run's end. */
export const TERMINAL_EVENTS = ['run.completed', 'run.failed', 'run.cancelled'];

interface StartInput {
  runId: string; agentId: string; issueId: string | null; taskKey: string; sessionId?: string | null; wake?: Record<string, unknown>;
}

interface IssueFacts { exists: boolean }

/**
 * The `adapter-run` service (the agent runtime starts a run of an eta_gateway agent): the
 * execution that creates the run on the run server (Idempotency-Key = the run id, so a repeated
 * create is the same run there) and follows it to its end. The kernel adds the run server's key
 * (from the agent's configuration, never seen here) and the run token; configured headers that
 * try to set either, or the session, are left out with a warning in the run's log.
 */
export async function adapterRunService(input: unknown, ctx: RemoteRunnerContext): Promise<{ executionId: string; startedAt: string | null }> {
  const start = input as StartInput;
  const agent = await ctx.agents.getConfig(start.agentId);
  if (!agent || agent.adapterType !== ADAPTER_TYPE) throw new PluginError(409, 'adapter_mismatch', `The agent is not an ${ADAPTER_TYPE} agent`);
  const config = runConfig(agent.adapterConfig);
  const base = parseHttpUrl(config.apiBaseUrl);
  if (!base) throw new PluginError(409, 'adapter_config_invalid', 'adapterConfig.apiBaseUrl is not an http or https URL');
  if (base.protocol === 'http:' && !isLoopbackHost(base.hostname) && !config.dangerouslyAllowInsecureRemoteHttp) {
    throw new PluginError(409, 'insecure_remote_http', 'adapterConfig.apiBaseUrl uses plain HTTP to a host that is not loopback');
  }
  let issueId: string | null = null;
  if (start.issueId && config.sessionKeyStrategy === 'issue') {
    // The session follows the issue only when it is an issue of the agent's own company (this call's company).
    const facts = await ctx.services.call<IssueFacts>('work', 'issue', { issueId: start.issueId });
    if (!facts.exists) throw new PluginError(422, 'invalid_session_issue', 'The run\'s issue is not an issue of the agent\'s company');
    issueId = start.issueId;
  }
  const key = sessionKey(config.sessionKeyStrategy, { agentId: start.agentId, runId: start.runId, issueId, taskKey: start.taskKey });
  const headers: Record<string, string> = {};
  const notes: string[] = [];
  for (const name of [...Object.keys(config.headers), ...config.maskedHeaders]) {
    if (PROTECTED.has(name.toLowerCase())) notes.push(`adapterConfig.headers.${name} is ignored: authentication, session and protocol headers cannot be overridden`);
    else if (config.maskedHeaders.includes(name)) notes.push(`adapterConfig.headers.${name} is not sent: headers are for non-secret values (the run server's key is apiKey)`);
    else headers[name.toLowerCase()] = config.headers[name]!;
  }
  headers['idempotency-key'] = start.runId;
  if (key) headers[SESSION_HEADER] = key;
  const runs = `${config.apiBaseUrl}/v1/runs`;
  const execution = await ctx.executions.start({
    kind: 'http', runId: start.runId, url: runs, method: 'POST', headers, baseUrlKey: 'apiBaseUrl', instanceUrlKey: 'serviceApiUrl',
    secretHeaders: [{ header: 'authorization', configKey: 'apiKey', scheme: 'Bearer' }], tokenHeader: TOKEN_HEADER,
    timeoutMs: config.timeoutSec * 1000,
    body: {
      input: start.wake ?? {}, instructions: config.instructions, sessionKey: key,
      metadata: { companyId: ctx.invocation.companyId, agentId: start.agentId, runId: start.runId, issueId: start.issueId, taskKey: start.taskKey },
      serviceApiUrl: config.serviceApiUrl,
    },
    remoteRun: {
      // Keel's run servers name the run `id`, the reference kind `run_id`.
      idField: ['id', 'run_id'], eventsUrl: `${runs}/{id}/events`, statusUrl: `${runs}/{id}`, stopUrl: `${runs}/{id}/stop`,
      reconnectMs: config.eventReconnectMs, terminalEvents: TERMINAL_EVENTS,
    },
    ...(notes.length > 0 ? { notes } : {}),
  });
  await ctx.db.query('insert into metered (run_id, company_id) values ($1, $2) on conflict do nothing', [start.runId, ctx.invocation.companyId]);
  return { executionId: execution.executionId, startedAt: execution.startedAt };
}
