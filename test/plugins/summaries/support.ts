import { chmod, copyFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Api, TestKernel } from '../../support/harness.ts';
import { processAgent, waitFor } from '../runtime/helpers.ts';

/** The summarizer agent's folder: its script, the file that tells it what to do, and where it leaves its answers. */
export interface SummarizerWorld { dir: string; setMode(mode: string): Promise<void>; answers(taskId: string): Promise<any> }

export async function summarizerWorld(): Promise<SummarizerWorld> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-summarizer-'));
  await chmod(dir, 0o777);
  await copyFile(fileURLToPath(new URL('./summarizer-agent.mjs', import.meta.url)), join(dir, 'summarizer.mjs'));
  await chmod(join(dir, 'summarizer.mjs'), 0o644);
  const setMode = async (mode: string) => { await writeFile(join(dir, 'mode'), mode, { mode: 0o644 }); await chmod(join(dir, 'mode'), 0o644); };
  await setMode('idle');
  const answers = (taskId: string) => waitFor(async () => {
    try { return JSON.parse(await readFile(join(dir, `${taskId}.json`), 'utf8')); } catch { return undefined; }
  }, `the summarizer's answers for ${taskId}`);
  return { dir, setMode, answers };
}

/** The company's built-in summarizers: the agents made for the summaries plugin (managed key summarizer); one at most. */
export async function builtInSummarizers(api: Api, companyId: string): Promise<any[]> {
  const res = await api.get(`/api/companies/${companyId}/agents`);
  expect(res.status, res.text).toBe(200);
  const list = Array.isArray(res.body) ? res.body : res.body.agents;
  return list.filter((agent: any) => agent.managedBy?.plugin === 'summaries' && agent.managedBy?.key === 'summarizer');
}

export async function builtInSummarizer(api: Api, companyId: string) {
  const found = await builtInSummarizers(api, companyId);
  expect(found).toHaveLength(1);
  return found[0];
}

/**
 * The board points the built-in summarizer at the summarizer script (an ordinary agent PATCH),
 * which makes it ready. A company's first generate makes the summarizer: it answers 422
 * needs_setup, as it does for an operator who has not set it up yet.
 */
export async function configureSummarizer(api: Api, companyId: string, world: SummarizerWorld) {
  if ((await builtInSummarizers(api, companyId)).length === 0) {
    const first = await api.post(`/api/companies/${companyId}/summary-slots/workspaces_overview/header/generate`, {});
    expect(first.status, first.text).toBe(422);
    expect(first.body.details).toEqual({ code: 'summarizer_not_configured', status: 'needs_setup' });
  }
  const agent = await builtInSummarizer(api, companyId);
  const patched = await api.patch(`/api/agents/${agent.id}`, {
    adapterType: 'process',
    adapterConfig: { command: process.execPath, args: [join(world.dir, 'summarizer.mjs')], graceSec: 1, env: { MODE_FILE: join(world.dir, 'mode'), OUT_DIR: world.dir } },
  });
  expect(patched.status, patched.text).toBe(200);
  // Made paused until the board approves or writes its configuration: written now, it resumes.
  expect((await api.get(`/api/companies/${companyId}/summarizer`)).body).toEqual({ agentId: agent.id, status: 'paused' });
  const resumed = await api.post(`/api/agents/${agent.id}/resume`, {});
  expect(resumed.status, resumed.text).toBe(200);
  const res = await api.get(`/api/companies/${companyId}/summarizer`);
  expect(res.status, res.text).toBe(200);
  expect(res.body).toEqual({ agentId: agent.id, status: 'ready' });
  return resumed.body;
}

export async function enableSummaries(t: TestKernel, on = true) {
  const res = await t.api.patch('/api/instance/settings/experimental', { enableSummaries: on });
  expect(res.status, res.text).toBe(200);
}

export const slotUrl = (companyId: string, kind: string, rest = '') => `/api/companies/${companyId}/summary-slots/${kind}/header${rest}`;
