import { readFileSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
export { waitFor } from '../../support/wait-for.ts';
import { waitFor } from '../../support/wait-for.ts';

/**
 * Agent scripts for the process adapter. Agents run as the unprivileged agent user, so the
 * scripts live in a world-readable temporary folder. `agent.mjs` is the runnable example of
 * examples/runtime-agent; the others act out what the tests need.
 */
const SCRIPTS: Record<string, string> = {
  // Runs until it is killed (ignores SIGTERM, so the kill is the executor's SIGKILL after grace).
  'hang.cjs': `console.log('working'); process.on('SIGTERM', () => console.log('ignoring SIGTERM')); setInterval(() => {}, 1000);`,
  // Reports usage every 100 ms until it is killed; SPEND_CENTS per report.
  'spender.cjs': `let n = 0; setInterval(() => { n += 1; process.stdout.write(JSON.stringify({ type: 'service.usage', provider: 'example', model: 'spendy', costCents: Number(process.env.SPEND_CENTS || 4), outputTokens: 10 }) + '\\n'); }, 100);`,
  // Reports usage every 50 ms and goes on through SIGTERM (its grace period) until it is killed.
  'grace-spender.cjs': `process.on('SIGTERM', () => {}); setInterval(() => { process.stdout.write(JSON.stringify({ type: 'service.usage', provider: 'example', model: 'grace', costCents: 3, outputTokens: 7 }) + '\\n'); }, 50);`,
  // Answers what it found of its instructions (SERVICE_INSTRUCTIONS_FILE, relative to its working directory or absolute).
  'instructions.cjs': `const fs = require('node:fs'); const file = process.env.SERVICE_INSTRUCTIONS_FILE || null; let content = null; let style = null;
    try { content = fs.readFileSync(file, 'utf8'); } catch {} try { style = fs.readFileSync('.keel/instructions/docs/style.md', 'utf8'); } catch {}
    console.log(JSON.stringify({ type: 'service.result', result: { file, dir: process.env.SERVICE_INSTRUCTIONS_DIR || null, content, style } }));`,
  // Checks out its issue with the run token, leaves the token where the test can try it after the run, then runs until killed.
  'checkout-hang.cjs': `const fs = require('node:fs');
    fetch(process.env.SERVICE_API_URL + '/api/issues/' + process.env.SERVICE_TASK_ID + '/checkout', { method: 'POST',
      headers: { authorization: 'Bearer ' + process.env.SERVICE_API_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ agentId: process.env.SERVICE_AGENT_ID }) })
      .then(async (res) => { fs.writeFileSync(process.env.TOKEN_FILE, process.env.SERVICE_API_KEY); console.log('checked out: ' + res.status); });
    setInterval(() => {}, 1000);`,
  // Answers the files of its materialised skills (SERVICE_SKILLS_DIR), each with its SHA-256.
  'skills.cjs': `const fs = require('node:fs'); const path = require('node:path'); const crypto = require('node:crypto'); const dir = process.env.SERVICE_SKILLS_DIR || null; const files = {};
    const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { const p = path.join(d, e.name); if (e.isDirectory()) walk(p); else files[path.relative(dir, p)] = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex'); } };
    if (dir) walk(dir); console.log(JSON.stringify({ type: 'service.result', result: { dir, files } }));`,
  // Succeeds at once.
  'quick.cjs': `console.log('tick');`,
  // Exits with code 7 after a plain line and a line that is not the protocol.
  'fail.cjs': `console.log('about to fail'); console.log(JSON.stringify({ type: 'service.usage', costCents: -5 })); process.exit(7);`,
};

/** A kernel with the first-party plugins, one company of the given name, and the folder of agent scripts. */
export async function startRuntimeWorld(companyName: string): Promise<{ t: TestKernel; company: any; scripts: string }> {
  const scripts = await agentScripts();
  const t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  return { t, company: await createCompany(t.api, { name: companyName }), scripts };
}

export async function agentScripts(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-runtime-agents-'));
  await chmod(dir, 0o755);
  await copyFile(fileURLToPath(new URL('../../../examples/runtime-agent/agent.mjs', import.meta.url)), join(dir, 'agent.mjs'));
  await chmod(join(dir, 'agent.mjs'), 0o644);
  for (const [name, text] of Object.entries(SCRIPTS)) await writeFile(join(dir, name), text, { mode: 0o644 });
  return dir;
}

export async function processAgent(api: Api, companyId: string, script: string, config: Record<string, unknown> = {}, fields: Record<string, unknown> = {}) {
  return createAgent(api, companyId, { adapterType: 'process', adapterConfig: { command: process.execPath, args: [script], graceSec: 1, ...config }, ...fields });
}

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/** The run once its status satisfies `accept` (by default: once it ended and its process's end was recorded). */
export async function runWhen(t: TestKernel, runId: string, accept: (run: any) => boolean = (run) => ENDED.has(run.status) && run.finishedAt !== null && (run.exitCode !== null || run.signal !== null || run.httpStatus !== null || run.errorCode !== null || run.executionId === null), timeoutMs?: number) {
  let last: unknown;
  try {
    return await waitFor(async () => {
      const res = await t.api.get(`/api/heartbeat-runs/${runId}`);
      expect(res.status, res.text).toBe(200);
      last = res.body;
      return accept(res.body) ? res.body : undefined;
    }, `run ${runId}`, timeoutMs);
  } catch (error) {
    // A run that never gets where it was expected: what it is, and what the event chain behind it is doing.
    throw new Error(`${(error as Error).message}\nrun: ${JSON.stringify(last)}\n${await eventChainState(t)}`);
  }
}

/** Event deliveries not yet delivered, and the runtime's and costs plugin's last log lines: where a run's chain of events stands. */
async function eventChainState(t: TestKernel): Promise<string> {
  const open = await t.sql.query(
    `select d.subscriber, o.name, d.state, d.attempts, d.available_at, d.lease_until, d.last_error
       from keel_events.deliveries d join keel_events.outbox o on o.seq = d.event_seq where d.state <> 'delivered' order by d.event_seq`).catch((error: Error) => ({ rows: [{ error: error.message }] }));
  // What each database session of this kernel is doing, and which sessions block it: a call that
  // hangs until its deadline shows here as a session waiting on a lock another one holds.
  const sessions = await t.sql.query(
    `select pid, usename, state, wait_event_type, wait_event, pg_blocking_pids(pid) as blocked_by,
            round(extract(epoch from now() - xact_start)::numeric, 1) as xact_seconds, left(query, 160) as query
       from pg_stat_activity where datname = current_database() and state <> 'idle' and pid <> pg_backend_pid() order by xact_start`)
    .catch((error: Error) => ({ rows: [{ error: error.message }] }));
  const logs: string[] = [];
  for (const plugin of ['runtime', 'costs']) {
    const res = await t.api.get(`/api/plugins/${plugin}/logs?limit=20`);
    logs.push(`${plugin} log: ${res.status === 200 ? JSON.stringify(res.body.logs) : res.status}`);
  }
  return [`open deliveries: ${JSON.stringify(open.rows)}`, `busy database sessions: ${JSON.stringify(sessions.rows)}`, ...logs].join('\n');
}

export async function wakeOk(api: Api, agentId: string, body: Record<string, unknown> = {}) {
  const res = await api.post(`/api/agents/${agentId}/wakeup`, body);
  expect(res.status, res.text).toBe(202);
  return res.body;
}

/** Whether a process still runs (a zombie waiting for its reaper counts as gone). */
export function alive(pid: number): boolean {
  try { return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
}
