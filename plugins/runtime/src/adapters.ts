import type { AgentConfigView } from '@keel/sdk/plugin';
import type { Row } from './context.ts';

/**
 * What an execution of a run gets besides what the kernel sets itself: the process adapter's
 * extra environment, or the http adapter's request. The command, arguments, working directory,
 * configured environment and deadlines of a process come from the agent's configuration in the
 * kernel, never from here; the canonical SERVICE_* run values win over everything.
 */
export function processEnvironment(run: Row, wakeup: Row, sessionId: string | null): Record<string, string> {
  const env: Record<string, string> = {
    SERVICE_WAKE_REASON: String(run.wake_reason ?? ''),
    SERVICE_WAKE_SOURCE: String(run.invocation_source),
    SERVICE_WAKE_PAYLOAD_JSON: JSON.stringify(wakeup.payload ?? {}),
    SERVICE_TASK_KEY: String(run.task_key),
  };
  if (run.issue_id) env.SERVICE_TASK_ID = String(run.issue_id);
  if (sessionId) env.SERVICE_SESSION_ID = sessionId;
  return env;
}

/** The wake as the http adapter's body (and a contributed adapter's start) carries it. */
export function wakeOf(run: Row, wakeup: Row, sessionId: string | null) {
  return {
    source: run.invocation_source, triggerDetail: run.trigger_detail, reason: run.wake_reason ?? null,
    payload: wakeup.payload ?? {}, issueId: run.issue_id ?? null, taskKey: run.task_key, sessionId,
  };
}

/** How the kernel masks a secret value in a configuration it shows. */
const MASKED = '[REDACTED]';

/**
 * The http adapter's request: the configured url and method, the body is the configured
 * payloadTemplate plus agentId, runId, companyId and wake. The run token travels in a header the
 * kernel sets, never in the body. Configured headers go along except those whose value is a
 * secret (the runtime sees them masked).
 */
export function httpRequest(agent: AgentConfigView, run: Row, wakeup: Row, sessionId: string | null) {
  const config = agent.adapterConfig;
  const template = config.payloadTemplate && typeof config.payloadTemplate === 'object' && !Array.isArray(config.payloadTemplate) ? config.payloadTemplate as Record<string, unknown> : {};
  const headers: Record<string, string> = {};
  if (config.headers && typeof config.headers === 'object') {
    for (const [name, value] of Object.entries(config.headers as Record<string, unknown>)) {
      if (typeof value === 'string' && value !== MASKED && !/^(authorization|cookie|host|content-length)$/i.test(name)) headers[name] = value;
    }
  }
  const timeoutMs = typeof config.timeoutMs === 'number' && config.timeoutMs > 0 ? Math.min(Math.floor(config.timeoutMs), 86_400_000) : undefined;
  return {
    kind: 'http' as const,
    runId: String(run.id),
    url: String(config.url ?? ''),
    method: typeof config.method === 'string' && /^[A-Z]{3,7}$/.test(config.method.toUpperCase()) ? config.method.toUpperCase() : 'POST',
    headers,
    body: { ...template, agentId: run.agent_id, runId: run.id, companyId: run.company_id, wake: wakeOf(run, wakeup, sessionId) },
    ...(timeoutMs ? { timeoutMs } : {}),
    ...(config.stream === 'sse' ? { stream: 'sse' as const } : {}),
  };
}
