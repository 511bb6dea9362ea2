import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import type { ApiResponse, TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { agentScripts, runWhen, wakeOk } from '../plugins/runtime/helpers.ts';

const TRANSCRIPT_TOOL = fileURLToPath(new URL('./fixtures/transcript-tool', import.meta.url));
const PAGE_PROBE = fileURLToPath(new URL('./fixtures/page-probe', import.meta.url));

/** A run that talks: a session start, thinking, a tool call with its result, a message and the result. */
const TALKER = `const say = (entries) => console.log(JSON.stringify({ type: 'service.transcript', entries }));
say([{ kind: 'init', sessionId: 'sess-1', model: 'scripted-2' }, { kind: 'assistant', text: 'Reading the issue.' }, { kind: 'thinking', text: 'A summary first.' },
  { kind: 'tool_call', id: 'c1', name: 'Write', input: { file: 'report.md' } }, { kind: 'tool_result', id: 'c1', output: 'wrote 12 lines' },
  { kind: 'assistant', text: 'The report is written.' }, { kind: 'result', text: 'Wrote the report.', isError: false, turns: 2, durationMs: 1500 }]);
console.log(JSON.stringify({ type: 'service.usage', provider: 'acme', model: 'acme-1', inputTokens: 1200, outputTokens: 300, costCents: 42 }));
console.log(JSON.stringify({ type: 'service.result', result: { text: 'Wrote the report.' } }));`;

async function ok<T = any>(call: Promise<ApiResponse<T>>): Promise<T> {
  const res = await call;
  expect(res.status, res.text).toBeLessThan(300);
  return res.body;
}

/**
 * One company with something on every page (agents, a finished run with its transcript, issues
 * with a comment, a project with a workspace, goals, spend, a budget policy, a secret, a pending
 * hire, an execution workspace, a plugin page) and one empty company, whose pages show their
 * empty states. Answers every page of the console, by a name for the test's messages.
 */
export async function fillConsoleWorld(t: TestKernel): Promise<Record<string, string>> {
  const api = t.api;
  await installAndEnable(t, TRANSCRIPT_TOOL);
  await installAndEnable(t, PAGE_PROBE);
  const scripts = await agentScripts();
  const talker = join(scripts, 'talker.cjs');
  await writeFile(talker, TALKER, { mode: 0o644 });

  const company = await createCompany(api, { name: 'Northwind Labs', description: 'Research and writing, run by agents.' });
  const empty = await createCompany(api, { name: 'Empty Co' });
  const c = `/api/companies/${company.id}`;
  const ada = await ok(api.post(`${c}/agents`, { name: 'Ada', role: 'ceo', title: 'Chief executive', adapterType: 'process', adapterConfig: { command: process.execPath, args: [join(scripts, 'quick.cjs')] } }));
  const writer = await ok(api.post(`${c}/agents`, { name: 'Writer', role: 'engineer', reportsTo: ada.id, adapterType: 'console_local', adapterConfig: { command: process.execPath, args: [talker], graceSec: 1 } }));
  const issues = [];
  for (const [index, title] of ['Draft the quarterly report', 'Review the onboarding flow', 'Fix the flaky import job', 'Write the launch note'].entries()) {
    issues.push(await ok(api.post(`${c}/issues`, { title, status: ['todo', 'in_progress', 'blocked', 'done'][index], priority: 'medium', assigneeAgentId: index === 0 ? undefined : ada.id })));
  }
  await ok(api.post(`/api/issues/${issues[0].id}/comments`, { body: 'First pass is done; the figures need a second look.' }));
  const { run } = await wakeOk(api, writer.id, { source: 'on_demand', reason: 'console walk', payload: { issueId: issues[0].id } });
  expect((await runWhen(t, run.id)).status).toBe('succeeded');

  await ok(api.patch(`${c}/budgets`, { budgetMonthlyCents: 20_000 }));
  for (let index = 0; index < 6; index++) {
    await ok(api.post(`${c}/cost-events`, { agentId: ada.id, provider: ['anthropic', 'openai'][index % 2], model: 'model-a', costCents: 40 + index * 37, occurredAt: new Date(Date.now() - index * 86_400_000).toISOString() }));
  }
  await ok(api.post(`${c}/secrets`, { name: 'SEARCH_API_KEY', value: 'not-a-real-key', description: 'Search provider key' }));
  const goal = await ok(api.post(`${c}/goals`, { title: 'Publish the yearly research digest', level: 'company', status: 'active', ownerAgentId: ada.id }));
  const project = await ok(api.post(`${c}/projects`, { name: 'Research digest', status: 'in_progress', leadAgentId: ada.id, goalId: goal.id, color: '#3366cc', description: 'The digest, planned and tracked by the agents.' }));
  await ok(api.post(`${c}/budgets/policies`, { scopeType: 'project', scopeId: project.id, amount: 50_000, warnPercent: 75 }));
  const digest = await ok(api.post(`/api/projects/${project.id}/workspaces`, { name: 'digest repository', cwd: '/srv/northwind/digest', repoUrl: 'https://git.example.com/northwind/digest.git', repoRef: 'main' }));
  const workspace = await ok(api.post(`${c}/execution-workspaces`, { projectWorkspaceId: digest.id, name: 'digest runner' }));
  await ok(api.patch(`/api/execution-workspaces/${workspace.id}`, {
    runtimeServices: [{ id: 'preview', name: 'Preview server', command: '/usr/bin/npm', args: ['run', 'preview'], port: 4173 }],
    workspaceCommands: [{ id: 'build', name: 'Build the digest', command: '/usr/bin/npm', args: ['run', 'build'], timeoutSec: 600 }],
  }));
  // A hire waiting for the board: the approvals page, the inbox and the dashboard show it.
  await ok(api.patch(c, { requireBoardApprovalForNewAgents: true }));
  await ok(api.post(`${c}/agent-hires`, { name: 'Candidate', role: 'engineer' }));

  const at = (id: string) => `/companies/${id}`;
  const pages: Record<string, string> = {
    companies: '/companies', plugins: '/plugins', 'plugin settings': '/plugins/page-probe', instance: '/settings', 'not found': '/nowhere',
  };
  const sections = ['dashboard', 'settings', 'inbox', 'agents', 'agents/new', 'issues', 'projects', 'goals', 'runs', 'approvals', 'costs', 'secrets',
    'model-providers', 'skills', 'activity', 'workspaces', 'feedback', 'members'];
  for (const section of sections) {
    pages[section] = `${at(company.id)}/${section}`;
    pages[`empty ${section}`] = `${at(empty.id)}/${section}`;
  }
  Object.assign(pages, {
    agent: `${at(company.id)}/agents/${writer.id}`, issue: `${at(company.id)}/issues/${issues[0].id}`, project: `${at(company.id)}/projects/${project.id}`,
    run: `${at(company.id)}/runs/${run.id}`, 'execution workspace': `${at(company.id)}/workspaces/${workspace.id}`, 'plugin page': `${at(company.id)}/pages/page-probe/report`,
  });
  return pages;
}
