import { spawn, execFileSync } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claudeCode } from '../../plugins/coding-agents/src/tools/claude-code.ts';
import { codingTool, installCodingTools } from '../support/coding-tools.ts';
import { startAnthropicModel } from '../support/scripted-models/anthropic.ts';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const ROUNDS = 10;
const WARMUP = 2;
const ENDED = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/**
 * The local adapter's own overhead per run, in one run: an alpha_local agent woken through Keel
 * (wakeup route, job queue, prompt from the wake, the tool launch as the agent user in its home
 * and PID namespace, its stream-json read into transcript, usage and result, the end classified
 * and reported) against the same Claude Code launch (the driver's arguments, the prompt on
 * stdin, the same user and a persistent home) started directly. The scripted model answers at
 * once, so what differs is Keel's work before the tool starts and after it exits.
 */
export async function run(): Promise<void> {
  await installCodingTools();
  const claude = await codingTool('claude');
  const model = await startAnthropicModel(() => ({ text: 'Done.', usage: { inputTokens: 12, outputTokens: 3 } }));
  const env = { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'sk-ant-bench' };
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  const home = await mkdtemp(join(tmpdir(), 'keel-bench-claude-home-'));
  try {
    const company = await kernel.call('POST', '/api/companies', { name: 'Local Adapter Bench' });
    const created = await kernel.call('POST', `/api/companies/${company.id}/agents`, {
      name: 'Bench Claude', role: 'engineer', adapterType: 'alpha_local', adapterConfig: { command: claude, env },
    });
    const agentId = String(created.agent?.id ?? created.id);
    const ended = async (runId: string) => {
      for (;;) {
        const runRow = await kernel.call('GET', `/api/heartbeat-runs/${runId}`);
        if (ENDED.includes(runRow.status) && runRow.finishedAt) return runRow;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const sql = await kernel.sql();
    const throughKeel: number[] = [];
    const beforeStart: number[] = [];
    const afterExit: number[] = [];
    const lifetime: number[] = [];
    for (let i = 0; i < ROUNDS + WARMUP; i++) {
      const t0 = performance.now();
      const asked = Date.now();
      const { run: queued } = await kernel.call('POST', `/api/agents/${agentId}/wakeup`, { reason: 'bench' });
      const done = await ended(queued.id);
      if (done.status !== 'succeeded') throw new Error(`bench run ${done.status}: ${done.errorCode} ${JSON.stringify(done.resultJson)}`);
      if (i < WARMUP) continue;
      throughKeel.push(performance.now() - t0);
      // The executor records the spawn (started_at) and the exit (its last log line, "exited with code 0").
      const { rows } = await sql.query('select started_at from executions where run_id = $1', [queued.id]);
      const log = await kernel.call('GET', `/api/heartbeat-runs/${queued.id}/log?limitBytes=1048576`);
      const records = String(log.content).split('\n').filter(Boolean).map((record: string) => JSON.parse(record) as { at: string });
      beforeStart.push(new Date(rows[0].started_at).getTime() - asked);
      const exitedAt = new Date(records[records.length - 1]!.at).getTime();
      afterExit.push(new Date(done.finishedAt).getTime() - exitedAt);
      lifetime.push(exitedAt - new Date(rows[0].started_at).getTime());
    }

    // The same launch without Keel: the driver's arguments and home variables, the agent user, a persistent home.
    // The configuration as the plugin stores it for this agent (its defaults).
    const config = { command: claude, cwd: null, model: claudeCode.defaultModel, extraArgs: [], effort: null, maxTurns: null, toolSandbox: false, timeoutSec: 3600, graceSec: 15, env };
    const launch = claudeCode.launch({ config, sessionId: null, prompt: 'You were woken by Keel (on_demand: bench).\n', instructions: null, skills: [] });
    const user = agentUser();
    if (user) await chown(home, user.uid, user.gid);
    const direct: number[] = [];
    for (let i = 0; i < ROUNDS + WARMUP; i++) {
      const t0 = performance.now();
      await runDirect(claude, launch.args, launch.stdin, {
        PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: home, TMPDIR: home, ...launch.env, ...env,
        ...Object.fromEntries(Object.entries(launch.homeVariables).map(([name, path]) => [name, join(home, path)])),
      }, user);
      if (i >= WARMUP) direct.push(performance.now() - t0);
    }

    const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    printTable(`Local adapter (alpha_local, Claude Code ${execFileSync(claude, ['--version'], { encoding: 'utf8' }).trim()}, a model that answers at once)`, [
      { measure: `run through Keel: wakeup -> run ended, p50 (${ROUNDS} sequential)`, value: `${p50(throughKeel).toFixed(0)} ms` },
      { measure: `the same launch started directly, p50 (${ROUNDS} sequential)`, value: `${p50(direct).toFixed(0)} ms` },
      { measure: 'difference per run, through Keel - direct', value: `${(p50(throughKeel) - p50(direct)).toFixed(0)} ms` },
      { measure: 'Keel\'s own work before the tool starts: wakeup -> tool process spawned, p50', value: `${p50(beforeStart).toFixed(0)} ms` },
      { measure: 'Keel\'s own work after the tool exits: exit -> run ended (result, usage, end reported), p50', value: `${p50(afterExit).toFixed(0)} ms` },
      { measure: 'the tool process under Keel, spawned -> exited, p50 (PID namespace, agent user, home; direct above)', value: `${p50(lifetime).toFixed(0)} ms` },
      { measure: 'ratio: through Keel / direct', value: (p50(throughKeel) / p50(direct)).toFixed(2) },
    ]);
  } finally {
    await kernel.stop();
    await model.close();
    await rm(home, { recursive: true, force: true });
  }
}

/** The unprivileged user agents run as, when this process could switch to it (root), else null. */
function agentUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    return { uid: Number(execFileSync('id', ['-u', 'keel-agent'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'keel-agent'], { encoding: 'utf8' })) };
  } catch {
    return null;
  }
}

function runDirect(command: string, args: string[], stdin: string, env: Record<string, string>, user: { uid: number; gid: number } | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['pipe', 'ignore', 'pipe'], ...(user ?? {}) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`claude exited ${code}: ${stderr.slice(-500)}`))));
    child.stdin.end(stdin);
  });
}
