import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, wakeOk } from '../runtime/helpers.ts';
import { base, installWiki, mountWiki, WIKI } from './helpers.ts';

/**
 * The maintainer end to end: an agent process started by the runtime reads its task (an issue
 * naming a page and a topic), searches the wiki, reads the page, rewrites it with the hash it
 * read as expectedHash, and appends the log, all with its run's own key through the tools API.
 */
const MAINTAINER = `
const api = process.env.SERVICE_API_URL;
const headers = { authorization: 'Bearer ' + process.env.SERVICE_API_KEY, 'content-type': 'application/json' };
async function call(method, path, body) {
  const res = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(method + ' ' + path + ': ' + res.status + ' ' + text);
  return JSON.parse(text);
}
const tool = async (name, input) => (await call('POST', '/api/plugins/tools/execute', { tool: 'llm-wiki.' + name, input: { companyId: process.env.SERVICE_COMPANY_ID, wikiId: 'default', ...input } })).result;
const issue = await call('GET', '/api/issues/' + process.env.SERVICE_TASK_ID);
const [, page, topic] = /^Update (\\S+) about (\\S+)$/.exec(issue.title);
const found = await tool('wiki_search', { query: topic });
const current = await tool('wiki_read_page', { path: page });
const written = await tool('wiki_write_page', { path: page, content: current.content + '\\nUpdated by the maintainer: ' + found.results.length + ' pages mention ' + topic + '.\\n', expectedHash: current.hash });
let stale = null;
try { await tool('wiki_write_page', { path: page, content: 'late', expectedHash: current.hash }); } catch (error) { stale = String(error.message).includes('stale_write'); }
await tool('wiki_append_log', { entry: 'Updated ' + page + ' for issue ' + issue.id });
console.log(JSON.stringify({ type: 'service.result', result: { page, topic, found: found.results.map((r) => r.path), previousHash: written.previousHash, hash: written.hash, stale } }));
`;

let t: TestKernel;
let company: any;
let scripts: string;
let root: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Wiki Co'));
  await installWiki(t);
  root = await mountWiki(t, company.id);
  // The agent runs as the unprivileged agent user when the server runs as root: the folder stays ours, readable.
  await chmod(root, 0o755);
  const res = await t.api.post(`${base}/bootstrap`, { companyId: company.id });
  expect(res.status, res.text).toBe(200);
  await mkdir(join(scripts, 'wiki'), { recursive: true });
  await writeFile(join(scripts, 'wiki', 'maintainer.mjs'), MAINTAINER, { mode: 0o644 });
  await chmod(join(scripts, 'wiki'), 0o755);
});
afterAll(async () => { await t?.stop(); });

it('reads its task, searches, writes a page with expectedHash and appends the log', async () => {
  const seed = await t.api.post('/api/plugins/tools/execute', { tool: `${WIKI}.wiki_write_page`, companyId: company.id, input: { companyId: company.id, wikiId: 'default', path: 'concepts/tides.md', content: '# Tides\n\nThe moon pulls the sea.\n' } });
  expect(seed.status, seed.text).toBe(200);
  const agent = await processAgent(t.api, company.id, join(scripts, 'wiki', 'maintainer.mjs'), { timeoutSec: 60 }, { name: 'wiki-maintainer', role: 'knowledge-maintainer' });
  const issue = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Update concepts/tides.md about moon', assigneeAgentId: agent.id });
  expect(issue.status, issue.text).toBe(201);
  const woken = await wakeOk(t.api, agent.id, { reason: 'wiki task', payload: { issueId: issue.body.id } });
  const run = await runWhen(t, woken.run.id);
  expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', exitCode: 0 });
  expect(run.resultJson).toMatchObject({ page: 'concepts/tides.md', topic: 'moon', found: ['concepts/tides.md'], previousHash: seed.body.result.hash, stale: true });
  const page = await readFile(join(root, 'wiki/concepts/tides.md'), 'utf8');
  expect(page).toContain('Updated by the maintainer: 1 pages mention moon.');
  expect(await readFile(join(root, 'wiki/log.md'), 'utf8')).toContain(`Updated concepts/tides.md for issue ${issue.body.id}`);
  const ops = await t.api.get(`${base}/operations?companyId=${company.id}`);
  const byAgent = ops.body.operations.filter((o: any) => o.actorType === 'agent');
  expect(byAgent.map((o: any) => o.kind).sort()).toEqual(['append_log', 'write_page']);
  expect(byAgent.every((o: any) => o.actorId === agent.id)).toBe(true);
});
