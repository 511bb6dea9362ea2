import { chmod, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { transcriptOf as requestText, type ChatReply, type ChatRequest } from '../../support/scripted-models/openai-chat.ts';
import type { TestKernel } from '../../support/harness.ts';

/**
 * What the OpenCode and Pi end-to-end tests share: the scripted model's behaviour (use the
 * shell to comment on the issue with the run token, then say so) and the checks of a finished run.
 */

/** The shell command the model has the tool run: a comment on the run's issue, sent with the run's own token. */
export function commentCommand(body: string): string {
  const script = `fetch(process.env.SERVICE_API_URL + '/api/issues/' + process.env.SERVICE_TASK_ID + '/comments', { method: 'POST', `
    + `headers: { authorization: 'Bearer ' + process.env.SERVICE_API_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ body: ${JSON.stringify(body)} }) })`
    + `.then(async (res) => console.log('comment answered ' + res.status + ' ' + (await res.text()).slice(0, 120)))`;
  return `node -e ${shellQuote(script)}`;
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** An issue title that has the model run a shell command that does not end by itself. */
export const LONG_TASK = 'LONG-TASK';
/** A model the scripted provider refuses with 401, as a provider refuses a wrong key. */
export const REFUSED_MODEL = 'refused-model';
export const FINAL_TEXT = 'I commented on the issue.';
/** The figures of the two model calls of a run: prompt tokens include the cached part, as OpenAI reports them. */
export const CALL_USAGE = { promptTokens: 1100, cachedTokens: 800, completionTokens: 21 };
export const FINAL_USAGE = { promptTokens: 1200, cachedTokens: 1000, completionTokens: 9 };

/**
 * The model: a call whose last message is a tool result ends the turn; any other call has the
 * tool comment through its shell tool (`bash`, with a description for OpenCode's schema).
 */
export function commentingModel(commentBody: string) {
  return (request: ChatRequest): ChatReply => {
    const messages = request.body?.messages ?? [];
    if (request.body?.model === REFUSED_MODEL) return { error: { status: 401, message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } };
    if (!request.body?.tools?.some((tool) => tool.function.name === 'bash')) return { text: 'not a turn of the agent', usage: { promptTokens: 1, completionTokens: 1 } };
    if (requestText(request).includes(LONG_TASK) && messages.at(-1)?.role !== 'tool') {
      return { text: 'This takes a while.', toolCall: { name: 'bash', arguments: { command: 'sleep 600', description: 'Wait' } }, usage: CALL_USAGE };
    }
    if (messages.at(-1)?.role === 'tool') return { text: FINAL_TEXT, usage: FINAL_USAGE };
    return { text: 'Commenting now.', toolCall: { name: 'bash', arguments: { command: commentCommand(commentBody), description: 'Comment on the issue' } }, usage: CALL_USAGE };
  };
}

/** The run's cost events, oldest first. */
export async function costEventsOf(t: TestKernel, runId: string): Promise<any[]> {
  return (await t.sql.query('select * from plugin_costs.cost_events where heartbeat_run_id = $1 order by occurred_at, created_at', [runId])).rows;
}

/** Both model calls of a run as cost events: the uncached input, the cached part, the output. */
export function expectRunCosts(costs: any[], agentId: string, issueId: string, provider: string, model: string): void {
  const figures = costs.map((cost) => [Number(cost.input_tokens), Number(cost.cached_input_tokens), Number(cost.output_tokens)]);
  expect(figures.sort((a, b) => b[0]! - a[0]!)).toEqual([[300, 800, 21], [200, 1000, 9]]);
  for (const cost of costs) expect(cost).toMatchObject({ agent_id: agentId, issue_id: issueId, provider, model });
}

/** The run's transcript entries. */
export async function transcriptOf(t: TestKernel, runId: string): Promise<any[]> {
  const res = await t.api.get(`/api/heartbeat-runs/${runId}/transcript?limit=1000`);
  expect(res.status, res.text).toBe(200);
  return res.body.entries;
}

/** The descriptions (front matter) of the skills in a folder of an agent's home: what the tool must show its model. */
export async function skillDescriptions(t: TestKernel, agentId: string, folder: string): Promise<string[]> {
  const root = join(t.dataDir, 'agent-homes', agentId, folder);
  const descriptions: string[] = [];
  for (const name of await readdir(root)) {
    const text = await readFile(join(root, name, 'SKILL.md'), 'utf8');
    const description = /^description:\s*(.+)$/m.exec(text)?.[1]?.trim().replace(/^["']|["']$/g, '');
    if (description) descriptions.push(description);
  }
  return descriptions;
}

/** Gives the agent a skill of the company's (imported from a folder, then desired): the runtime hands it to the run. */
export async function giveSkill(t: TestKernel, companyId: string, agentId: string, name: string, description: string): Promise<string> {
  const source = await mkdtemp(join(tmpdir(), 'keel-skill-'));
  await chmod(source, 0o755);
  await writeFile(join(source, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\nWrite it briefly.\n`);
  const imported = await t.api.post(`/api/companies/${companyId}/skills/import`, { source });
  expect(imported.status, imported.text).toBe(201);
  const key = imported.body.imported[0].key as string;
  const synced = await t.api.post(`/api/agents/${agentId}/skills/sync`, { desiredSkills: [key] });
  expect(synced.status, synced.text).toBe(200);
  return synced.body.entries.find((entry: any) => entry.key === key).runtimeName as string;
}
