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

/** A process agent running the summarizer script, designated as the company's summarizer. */
export async function designateSummarizer(api: Api, companyId: string, world: SummarizerWorld) {
  const agent = await processAgent(api, companyId, join(world.dir, 'summarizer.mjs'), { env: { MODE_FILE: join(world.dir, 'mode'), OUT_DIR: world.dir } }, { name: 'Summarizer' });
  const res = await api.put(`/api/companies/${companyId}/summarizer`, { agentId: agent.id });
  expect(res.status, res.text).toBe(200);
  expect(res.body).toEqual({ agentId: agent.id, status: 'ready' });
  return agent;
}

export async function enableSummaries(t: TestKernel, on = true) {
  const res = await t.api.patch('/api/instance/settings/experimental', { enableSummaries: on });
  expect(res.status, res.text).toBe(200);
}

export const slotUrl = (companyId: string, kind: string, rest = '') => `/api/companies/${companyId}/summary-slots/${kind}/header${rest}`;
