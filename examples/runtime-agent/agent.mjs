#!/usr/bin/env node
// A small agent for the process adapter (docs/api/runtime.md). It calls the API back with the
// run's token, works on the issue its run is bound to, reports usage and a result on stdout,
// and exits. Plain lines go to the run's log; JSON lines with a `type` are the protocol.
const api = process.env.SERVICE_API_URL;
const headers = { authorization: `Bearer ${process.env.SERVICE_API_KEY}`, 'content-type': 'application/json' };
const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function call(method, path, body) {
  const res = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const me = await call('GET', '/api/agents/me');
console.log(`I am ${me.name}, woken for: ${process.env.SERVICE_WAKE_REASON || 'no reason given'}`);
const inbox = await call('GET', '/api/agents/me/inbox-lite');
console.log(`${inbox.length} issue(s) in my inbox`);

const issueId = process.env.SERVICE_TASK_ID;
let commentId = null;
if (issueId) {
  await call('POST', `/api/issues/${issueId}/checkout`, { agentId: me.id });
  const comment = await call('POST', `/api/issues/${issueId}/comments`, { body: `Looked at this in run ${process.env.SERVICE_RUN_ID}.` });
  commentId = comment.id;
}

// What the model calls cost: metered at once against the budgets (a hard stop ends the run).
emit({ type: 'service.usage', provider: 'example', model: 'example-small', inputTokens: 1200, cachedInputTokens: 200, outputTokens: 300, costCents: Number(process.env.EXAMPLE_COST_CENTS ?? 3) });
// The adapter session to resume next time on this task (SERVICE_SESSION_ID).
const sessionId = process.env.SERVICE_SESSION_ID || `session-${process.env.SERVICE_RUN_ID}`;
emit({ type: 'service.result', result: { summary: 'done', issueId: issueId ?? null, commentId, inboxSize: inbox.length, resumedSession: process.env.SERVICE_SESSION_ID ?? null }, sessionId });
