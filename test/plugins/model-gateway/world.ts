import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import { createAgent } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { waitFor } from '../../support/wait-for.ts';
import { LOCAL_PROVIDERS } from './helpers.ts';

/**
 * A kernel with the first-party plugins that lets providers live on 127.0.0.1, and agents of the
 * process adapter whose run leaves its run token where the test reads it, then works until it is
 * cancelled: a live run to call the gateway with, as a tool of that run would.
 */
export interface GatewayWorld { t: TestKernel; dir: string; stop(): Promise<void> }

const TOKEN_AGENT = `const fs = require('node:fs'); fs.writeFileSync(process.env.TOKEN_FILE, process.env.SERVICE_API_KEY); setInterval(() => {}, 1000);`;

/** `captureLogs` collects every line the kernel logs (at trace level), for tests of what never lands there. */
export async function startGatewayWorld(overrides: Record<string, unknown> = {}, options: { captureLogs?: string[] } = {}): Promise<GatewayWorld> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-gateway-'));
  // Agents run as another user: the script must be readable and the token folder writable by it.
  await chmod(dir, 0o777);
  await writeFile(join(dir, 'token-agent.cjs'), TOKEN_AGENT, { mode: 0o644 });
  const t = await startTestKernel({ ...LOCAL_PROVIDERS, ...overrides }, { firstPartyDir: FIRST_PARTY_PLUGINS, captureLogs: options.captureLogs });
  return { t, dir, async stop() { await t.stop(); await rm(dir, { recursive: true, force: true }); } };
}

export interface LiveRun { agent: any; runId: string; token: string; api: Api }

/** An agent (with `fields`, e.g. its runtimeConfig) and a live run of it, with the run's token. */
export async function liveRun(world: GatewayWorld, companyId: string, fields: Record<string, unknown> = {}, wake: Record<string, unknown> = {}): Promise<LiveRun> {
  const tokenFile = join(world.dir, `token-${Math.random().toString(36).slice(2)}`);
  const agent = await createAgent(world.t.api, companyId, {
    adapterType: 'process', adapterConfig: { command: process.execPath, args: [join(world.dir, 'token-agent.cjs')], graceSec: 1, env: { TOKEN_FILE: tokenFile } }, ...fields,
  });
  await eventsSettled(world.t);
  const woken = await world.t.api.post(`/api/agents/${agent.id}/wakeup`, wake);
  expect(woken.status, woken.text).toBe(202);
  const token = await waitFor(async () => existsSync(tokenFile) && readFileSync(tokenFile, 'utf8'), 'the run to leave its token');
  return { agent, runId: woken.body.run.id, token, api: world.t.api.as(token) };
}

/** Cancels a run and waits until it has ended. */
export async function endRun(world: GatewayWorld, runId: string): Promise<void> {
  const res = await world.t.api.post(`/api/heartbeat-runs/${runId}/cancel`);
  expect(res.status, res.text).toBe(200);
  await waitFor(async () => {
    const run = await world.t.api.get(`/api/heartbeat-runs/${runId}`);
    return run.body.status === 'cancelled' && run.body.finishedAt !== null;
  }, `run ${runId} to end`);
}

/** The cost events of a company as stored, oldest first. */
export async function costRows(t: TestKernel, companyId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select * from plugin_costs.cost_events where company_id = $1 order by occurred_at, created_at', [companyId]);
  return rows;
}

/**
 * Waits until every proxied call of the kernel has ended (its ledger row and proxy.finished are
 * written after the last byte reached the client) and every event delivery has settled.
 */
export async function callsSettled(t: TestKernel): Promise<void> {
  await waitFor(async () => (await t.sql.query("select count(*)::int as n from proxied_calls where status = 'running'")).rows[0].n === 0, 'proxied calls to end');
  await eventsSettled(t);
}
