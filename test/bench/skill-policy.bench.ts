import { fileURLToPath } from 'node:url';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const RULES = 1_000;
const REQUESTS = Number(process.env.POLICY_BENCH_REQUESTS ?? 2_000);
const CONSUMER = fileURLToPath(new URL('../plugins/skill-policy/fixtures/decide-consumer', import.meta.url));

/**
 * Skill policy evaluation with 1,000 rules, none of which matches (every rule of the action is
 * tried, then the default decides): latency of POST .../skill-policy/evaluate over HTTP, one
 * request at a time, and of the `decide` service called from another plugin's isolate (timed
 * there, with the isolate's millisecond clock, plus the mean over all calls). The caller is an
 * agent, whose role the policy reads from the kernel on every decision.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    await kernel.call('POST', '/api/plugins/install', { localPath: CONSUMER });
    await kernel.call('POST', '/api/plugins/decide-consumer/enable', {});
    const company = await kernel.call('POST', '/api/companies', { name: 'Policy Bench' });
    const agent = await kernel.call('POST', `/api/companies/${company.id}/agents`, { name: 'Bench Agent', role: 'engineer' });
    const key = (await kernel.call('POST', `/api/agents/${agent.id}/keys`, { name: 'bench' })).token as string;
    const rules = Array.from({ length: RULES }, (_, i) => ({
      id: `rule-${String(i).padStart(4, '0')}`, priority: i % 50, effect: 'deny',
      subject: i % 2 ? { type: 'roles', roles: [`role-${i}`] } : { type: 'agents', agentIds: [crypto.randomUUID()] },
      actions: ['skills.import', 'skills.install'],
      resources: { sourceLocators: [`https://github.com/acme/repo-${i}`] },
    }));
    await kernel.call('PUT', `/api/companies/${company.id}/skill-policy`, { schemaVersion: 1, defaultEffect: 'allow', expectedRevision: 0, rules });
    const input = { action: 'skills.import', resource: { sourceType: 'git', sourceLocator: 'https://github.com/Other/Repo.git', skillKey: 'other/repo/skill' } };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${kernel.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
      return JSON.parse(text);
    };
    const evaluatePath = `/api/companies/${company.id}/skill-policy/evaluate`;
    for (let i = 0; i < 100; i++) await post(evaluatePath, input);
    const http: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const started = performance.now();
      const decision = await post(evaluatePath, input);
      http.push(performance.now() - started);
      if (decision.reason !== 'policy_default') throw new Error(`unexpected decision ${JSON.stringify(decision)}`);
    }

    const manyPath = `/api/plugins/decide-consumer/companies/${company.id}/decide-many`;
    await post(manyPath, { count: 200, input });
    const service = await post(manyPath, { count: REQUESTS, input });
    if (service.last.reason !== 'policy_default') throw new Error(`unexpected decision ${JSON.stringify(service.last)}`);

    printTable(`skill policy evaluation, ${RULES} rules, none matching (${REQUESTS} sequential decisions each)`, [
      { path: 'POST /skill-policy/evaluate (HTTP, client-timed)', 'p50 ms': pct(http, 50), 'p99 ms': pct(http, 99), 'mean ms': mean(http) },
      { path: 'decide service from a plugin (isolate-timed, 1 ms clock)', 'p50 ms': pct(service.durationsMs, 50), 'p99 ms': pct(service.durationsMs, 99), 'mean ms': round(service.totalMs / REQUESTS) },
    ]);
  } finally {
    await kernel.stop();
  }
}

const round = (value: number) => Math.round(value * 100) / 100;
const mean = (values: number[]) => round(values.reduce((sum, value) => sum + value, 0) / values.length);
function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
}
