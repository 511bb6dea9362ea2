#!/usr/bin/env node
// A summarizer for the process adapter: reads the task its run is bound to, takes it, reads the
// slot the task names and writes a summary through the API with its run token. What it does is
// read from MODE_FILE when it starts: `write` (the default), `stale` (first writes on a made-up
// base revision, then on the one the 409 names), `finish` (closes the task without writing),
// `superseded` (waits until a newer task took the slot, then writes), `idle` (does nothing).
// Each answer it got is kept in OUT_DIR/<taskId>.json for the test to read.
import { readFileSync, writeFileSync } from 'node:fs';

const api = process.env.SERVICE_API_URL;
const headers = { authorization: `Bearer ${process.env.SERVICE_API_KEY}`, 'content-type': 'application/json' };
const call = async (method, path, body) => {
  const res = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const mode = (() => { try { return readFileSync(process.env.MODE_FILE, 'utf8').trim() || 'write'; } catch { return 'write'; } })();
const taskId = process.env.SERVICE_TASK_ID;
const answers = [];
const save = () => writeFileSync(`${process.env.OUT_DIR}/${taskId}.json`, JSON.stringify({ mode, runId: process.env.SERVICE_RUN_ID, answers }));

if (taskId && mode !== 'idle') {
  const task = (await call('GET', `/api/issues/${taskId}`)).body;
  answers.push({ step: 'checkout', ...(await call('POST', `/api/issues/${taskId}/checkout`, { agentId: process.env.SERVICE_AGENT_ID, expectedStatuses: ['todo', 'in_progress'] })) });
  // The task names the slot's read route: `GET /api/companies/.../summary-slots/<kind>/<key>[?scopeId=...]`.
  const [, slotPath, query = ''] = /`GET (\/api\/companies\/[^`?]+\/summary-slots\/[^`?]+)(\?scopeId=[0-9a-f-]+)?`/.exec(task.description);
  const scopeId = query ? query.slice('?scopeId='.length) : undefined;
  const current = async () => (await call('GET', slotPath + query)).body;
  const write = async (baseRevisionId) => {
    const answer = await call('PUT', slotPath, { markdown: `**Nothing to decide right now.** Summary from ${task.identifier}.`, title: 'Status', changeSummary: `run ${process.env.SERVICE_RUN_ID}`, generationIssueId: taskId, baseRevisionId, model: 'test-model', scopeId });
    answers.push({ step: 'write', ...answer });
    return answer;
  };
  if (mode === 'finish') {
    answers.push({ step: 'close', ...(await call('PATCH', `/api/issues/${taskId}`, { status: 'done' })) });
  } else {
    if (mode === 'superseded') {
      for (let i = 0; i < 600; i += 1) {
        const slot = (await current()).slot;
        if (slot.generatingIssueId && slot.generatingIssueId !== taskId) break;
        await sleep(50);
      }
    }
    const base = (await current()).document?.latestRevisionId ?? null;
    let answer = await write(mode === 'stale' ? '00000000-0000-4000-8000-000000000000' : base);
    if (answer.status === 409 && answer.body?.details?.currentRevisionId) answer = await write(answer.body.details.currentRevisionId);
    if (answer.status === 200) answers.push({ step: 'close', ...(await call('PATCH', `/api/issues/${taskId}`, { status: 'done' })) });
  }
  save();
}
process.stdout.write(`${JSON.stringify({ type: 'service.result', result: { mode, taskId: taskId ?? null } })}\n`);
