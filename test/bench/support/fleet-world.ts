import { spawnSync } from 'node:child_process';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KernelProcess } from './kernel-process.ts';

/**
 * The agent of the fleet benchmark, a real process the runtime's `process` adapter starts as the
 * agent user on each heartbeat: it reads its inbox with the run's token, comments on the first
 * issue there, reports usage (a cost event, budgets evaluated) and answers its own start time
 * (`performance.timeOrigin`) as the run's result. node:http rather than fetch: loading fetch
 * costs each process about 30 ms of CPU, which would measure Node rather than Keel.
 */
const AGENT_SCRIPT = `const http = require('node:http');
const startedAt = performance.timeOrigin;
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
const headers = { authorization: 'Bearer ' + process.env.SERVICE_API_KEY, 'content-type': 'application/json' };
const call = (method, path, body) => new Promise((resolve, reject) => {
  const req = http.request(new URL(process.env.SERVICE_API_URL + path), { method, headers, agent: keepAlive }, (res) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk) => { text += chunk; });
    res.on('end', () => (res.statusCode >= 300 ? reject(new Error(method + ' ' + path + ': ' + res.statusCode + ' ' + text)) : resolve(text ? JSON.parse(text) : null)));
  });
  req.on('error', reject);
  req.end(body === undefined ? undefined : JSON.stringify(body));
});
(async () => {
  const inbox = await call('GET', '/api/agents/me/inbox-lite');
  const issue = inbox[0];
  if (issue) await call('POST', '/api/issues/' + issue.id + '/comments', { body: 'Heartbeat ' + process.env.SERVICE_RUN_ID + ': looked at ' + issue.identifier + ', nothing new.' });
  const line = (value) => process.stdout.write(JSON.stringify(value) + '\\n');
  line({ type: 'service.usage', provider: 'bench', model: 'fleet', inputTokens: 900, outputTokens: 120, costCents: 1 });
  line({ type: 'service.result', result: { startedAt, inbox: inbox.length, commented: Boolean(issue) } });
  keepAlive.destroy();
})().catch((error) => { console.error(String(error && error.message || error)); process.exit(1); });
`;

/**
 * The same agent as a POSIX shell script with curl: the same three calls and the same two lines,
 * at a fraction of the CPU. Starting Node costs about 27 ms of CPU a run (0.45 of the machine's
 * two cores at 1,000 agents), spent neither by Keel nor by any real agent tool, so this is the
 * default where curl is installed; \`KEEL_BENCH_FLEET_AGENT=node\` runs the Node script instead.
 * The inbox answer is read with the shell's own expansions (no sed, no jq): the first issue's
 * \`id\` and \`identifier\`.
 */
const SHELL_AGENT_SCRIPT = `#!/bin/sh
started=$(date +%s%3N)
auth="authorization: Bearer $SERVICE_API_KEY"
inbox=$(curl -sS --fail-with-body -H "$auth" "$SERVICE_API_URL/api/agents/me/inbox-lite") || { echo "GET inbox: $inbox" >&2; exit 1; }
commented=false
rest=\${inbox#*'"id":"'}
if [ "$rest" != "$inbox" ]; then
  id=\${rest%%'"'*}
  rest=\${inbox#*'"identifier":"'}
  identifier=\${rest%%'"'*}
  answer=$(curl -sS --fail-with-body -H "$auth" -H 'content-type: application/json' \\
    -d "{\\"body\\":\\"Heartbeat $SERVICE_RUN_ID: looked at $identifier, nothing new.\\"}" "$SERVICE_API_URL/api/issues/$id/comments") || { echo "POST comment: $answer" >&2; exit 1; }
  commented=true
fi
echo '{"type":"service.usage","provider":"bench","model":"fleet","inputTokens":900,"outputTokens":120,"costCents":1}'
echo "{\\"type\\":\\"service.result\\",\\"result\\":{\\"startedAt\\":$started,\\"commented\\":$commented}}"
`;

/** Which agent process the fleet runs: the shell script where curl is installed (or as KEEL_BENCH_FLEET_AGENT says), else the Node script. */
export type AgentKind = 'sh' | 'node';
export function agentKind(): AgentKind {
  const asked = process.env.KEEL_BENCH_FLEET_AGENT;
  if (asked === 'sh' || asked === 'node') return asked;
  if (asked !== undefined && asked !== '') throw new Error(`KEEL_BENCH_FLEET_AGENT must be sh or node (got ${asked})`);
  return spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0 ? 'sh' : 'node';
}

/** What the agent's script file names start with (the CPU sampler finds live agent processes by it). */
export const AGENT_SCRIPT_NAME = 'fleet-agent.';
const scriptFile = (kind: AgentKind) => (kind === 'sh' ? 'fleet-agent.sh' : 'fleet-agent.cjs');

export interface FleetShape { agents: number; companies: number; intervalSec: number }
export interface Fleet { companyIds: string[]; agentIds: string[]; scriptDir: string }

/** Runs `work` over `items` with at most `parallel` in flight. */
async function inParallel<T>(items: T[], parallel: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  }));
}

/**
 * Companies and agents, each agent with one issue assigned to it (what its inbox shows) and its
 * heartbeat on. An assignment wakes its agent at once; the agent is paused meanwhile so that the
 * setup starts no run (a paused agent's wake is left out, its heartbeat slots skipped), and all
 * agents are resumed together by `resume`, when the measured minutes begin.
 */
export async function buildFleet(kernel: KernelProcess, shape: FleetShape, agent: AgentKind, progress: (line: string) => void): Promise<Fleet> {
  const scriptDir = await mkdtemp(join(tmpdir(), 'keel-bench-fleet-'));
  await chmod(scriptDir, 0o755);
  const script = join(scriptDir, scriptFile(agent));
  await writeFile(script, agent === 'sh' ? SHELL_AGENT_SCRIPT : AGENT_SCRIPT, { mode: 0o644 });
  const command = agent === 'sh' ? { command: '/bin/sh', args: [script] } : { command: process.execPath, args: [script] };
  const companyIds: string[] = [];
  for (let c = 0; c < shape.companies; c++) companyIds.push((await kernel.call('POST', '/api/companies', { name: `Fleet ${c + 1}` })).id);
  const agentIds: string[] = new Array(shape.agents);
  let done = 0;
  await inParallel(Array.from({ length: shape.agents }, (_, i) => i), 10, async (i) => {
    const companyId = companyIds[i % companyIds.length]!;
    const created = await kernel.call('POST', `/api/companies/${companyId}/agents`, {
      name: `Agent ${i + 1}`, role: 'engineer', adapterType: 'process', adapterConfig: { ...command, timeoutSec: 60, graceSec: 1 },
    });
    const agentId = String(created.agent?.id ?? created.id);
    await kernel.call('POST', `/api/agents/${agentId}/pause`, { reason: 'bench setup' });
    await kernel.call('POST', `/api/companies/${companyId}/issues`, { title: `Task of agent ${i + 1}`, status: 'todo', assigneeAgentId: agentId });
    await kernel.call('PATCH', `/api/agents/${agentId}`, { runtimeConfig: { heartbeat: { enabled: true, intervalSec: shape.intervalSec } } });
    agentIds[i] = agentId;
    if (++done % 100 === 0) progress(`  ${done} agents set up`);
  });
  return { companyIds, agentIds, scriptDir };
}

/** Every agent resumed: from now on each heartbeat slot starts a run. */
export async function resumeFleet(kernel: KernelProcess, fleet: Fleet): Promise<void> {
  await inParallel(fleet.agentIds, 10, async (agentId) => { await kernel.call('POST', `/api/agents/${agentId}/resume`, {}); });
}
