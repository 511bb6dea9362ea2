import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, TestKernel } from '../../support/harness.ts';
import { addMember, boardToken, createAgent, createAgentKey, createCompany, insertUser } from '../../support/fixtures.ts';
import { createIssue, inRun, ISO, putDocument, startWorkWorld, UNKNOWN_ID } from './artifact-helpers.ts';

/**
 * Feedback traces: board users vote on agent output (agent comments and agent document
 * revisions of an issue), the trace keeps a snapshot of what was judged, and the company lists
 * its traces with the spec's filters, newest first, with an opaque cursor.
 */
let t: TestKernel;
let company: any;
let agent: any;
let agentApi: Api;
let outsiderApi: Api;
/** A board user who is a member of the company, and one who is a member of another company only. */
let memberId: string;
let memberApi: Api;
let strangerApi: Api;
let other: any;

beforeAll(async () => {
  ({ t, company, agent, agentApi, other, outsiderApi } = await startWorkWorld('Feedback Co', 'Author'));
  memberId = await insertUser(t);
  await addMember(t, company.id, memberId);
  memberApi = t.api.as(await boardToken(t, memberId));
  const strangerId = await insertUser(t);
  await addMember(t, other.id, strangerId);
  strangerApi = t.api.as(await boardToken(t, strangerId));
});
afterAll(async () => { await t?.stop(); });

const vote = (issueRef: string, body: Record<string, unknown>, api: Api = t.api) => api.post(`/api/issues/${issueRef}/feedback`, body);
const withdraw = (issueRef: string, query: string, api: Api = t.api) => api.delete(`/api/issues/${issueRef}/feedback?${query}`);
const traces = (query = '', api: Api = t.api, companyId = company.id) => api.get(`/api/companies/${companyId}/feedback-traces${query ? `?${query}` : ''}`);

async function comment(api: Api, issueId: string, body: string) {
  const res = await api.post(`/api/issues/${issueId}/comments`, { body });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function voted(issueRef: string, body: Record<string, unknown>, status = 201, api: Api = t.api) {
  const res = await vote(issueRef, body, api);
  expect(res.status, res.text).toBe(status);
  return res.body;
}

/** Rows a refused request must leave alone: the traces and the feedback activity. */
async function counts(): Promise<{ traces: number; activity: number }> {
  const traceRows = (await t.sql.query('select count(*)::int as n from plugin_work.feedback_traces')).rows[0].n;
  const activity = (await t.sql.query("select count(*)::int as n from activity_log where action like 'feedback.%'")).rows[0].n;
  return { traces: traceRows, activity };
}

async function feedbackActivity(traceId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select action, actor_type, actor_id, entity_type, details from activity_log where entity_id = $1 order by seq', [traceId]);
  return rows;
}

describe('voting', () => {
  it('records a vote on an agent comment as a trace with a snapshot (201), and replaces it on a second vote (200)', async () => {
    const project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Alpha' })).body;
    const issue = await createIssue(t.api, company.id, { title: 'Investigate churn', projectId: project.id });
    const run = await inRun(t, agent.id, company.id);
    const output = await comment(run.api, issue.id, 'Churn comes from the pricing page.');

    const first = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up', reason: 'Spot on' });
    expect(first).toEqual({
      id: expect.any(String), companyId: company.id, issueId: issue.id, issueIdentifier: issue.identifier, projectId: project.id,
      targetType: 'comment', targetId: output.id, authorAgentId: agent.id, runId: run.runId, voterUserId: 'local-board',
      vote: 'up', reason: 'Spot on', shareable: false, status: 'local', deliveryAttempts: 0, lastDeliveryError: null, sentAt: null,
      createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
      payload: {
        targetType: 'comment', targetId: output.id, issueId: issue.id, issueIdentifier: issue.identifier, issueTitle: 'Investigate churn',
        projectId: project.id, authorAgentId: agent.id, runId: run.runId, body: 'Churn comes from the pricing page.', bodyBytes: 34,
        bodyTruncated: false, documentId: null, documentKey: null, revisionNumber: null, title: null, targetCreatedAt: output.createdAt,
      },
    });

    // Voting again replaces vote, reason and shareable; the trace, its creation time and its snapshot stay.
    const second = await voted(issue.identifier.toLowerCase(), { targetType: 'comment', targetId: output.id.toUpperCase(), vote: 'down', shareable: true }, 200);
    expect(second).toEqual({ ...first, vote: 'down', reason: null, shareable: true, status: 'pending', updatedAt: expect.stringMatching(ISO) });
    expect(Date.parse(second.updatedAt)).toBeGreaterThan(Date.parse(first.updatedAt));
    const third = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'down', reason: null, shareable: false }, 200);
    expect([third.id, third.status, third.shareable]).toEqual([first.id, 'local', false]);
    expect((await t.sql.query('select count(*)::int as n from plugin_work.feedback_traces where target_id = $1', [output.id])).rows[0].n).toBe(1);

    const activity = await feedbackActivity(first.id);
    expect(activity.map((row) => [row.action, row.actor_type, row.actor_id, row.entity_type])).toEqual([
      ['feedback.voted', 'user', 'local-board', 'feedback_trace'], ['feedback.vote_changed', 'user', 'local-board', 'feedback_trace'],
      ['feedback.vote_changed', 'user', 'local-board', 'feedback_trace'],
    ]);
    expect(activity[0].details).toEqual({
      plugin: 'work', issueId: issue.id, identifier: issue.identifier, targetType: 'comment', targetId: output.id, authorAgentId: agent.id,
      vote: 'up', shareable: false, status: 'local', hasReason: true,
    });
    expect(activity[1].details).toMatchObject({ vote: 'down', shareable: true, status: 'pending', reasonChanged: true, previous: { vote: 'up', shareable: false, status: 'local' } });
    expect(activity[2].details).toMatchObject({ reasonChanged: false, previous: { vote: 'down', shareable: true, status: 'pending' } });
    // The voter's free text stays in the trace, out of the append-only log.
    expect(JSON.stringify(activity)).not.toContain('Spot on');
    // Board judgement, not the issue's history: the issue's activity leaves these entries out.
    const issueActivity = (await t.api.get(`/api/issues/${issue.id}/activity`)).body.map((entry: any) => entry.action);
    expect(issueActivity.filter((action: string) => action.startsWith('feedback.'))).toEqual([]);
    expect(issueActivity).toContain('issue.comment_added');

    // The trace keeps what was judged when the issue changes afterwards.
    const beta = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Beta' })).body;
    expect((await t.api.patch(`/api/issues/${issue.id}`, { title: 'Renamed', projectId: beta.id })).status).toBe(200);
    const listed = (await traces(`issueId=${issue.id}&includePayload=true`)).body.traces;
    expect(listed).toEqual([third]);
    expect(listed[0].payload).toMatchObject({ issueTitle: 'Investigate churn', projectId: project.id });
  });

  it('records a vote on an agent document revision, with its document and run; later revisions leave the snapshot alone', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Write the report' });
    const run = await inRun(t, agent.id, company.id);
    const doc = await putDocument(run.api, issue.id, 'report', { body: '# Report\n\nAll good.', title: 'Q3 report' });
    const trace = await voted(issue.id, { targetType: 'document_revision', targetId: doc.latestRevisionId, vote: 'up', shareable: true });
    expect(trace).toMatchObject({
      targetType: 'document_revision', targetId: doc.latestRevisionId, authorAgentId: agent.id, runId: run.runId, shareable: true, status: 'pending', projectId: null,
    });
    expect(trace.payload).toMatchObject({
      body: '# Report\n\nAll good.', bodyBytes: 19, bodyTruncated: false, documentId: doc.id, documentKey: 'report', revisionNumber: 1, title: 'Q3 report',
      runId: run.runId, authorAgentId: agent.id, projectId: null,
    });
    // An agent revision written without a run (an agent key) is agent output all the same, with no run.
    const next = await putDocument(agentApi, issue.id, 'report', { body: 'Rewritten', baseRevisionId: doc.latestRevisionId }, 200);
    const second = await voted(issue.id, { targetType: 'document_revision', targetId: next.latestRevisionId, vote: 'down' });
    expect([second.runId, second.payload.revisionNumber, second.payload.body]).toEqual([null, 2, 'Rewritten']);
    const first = (await traces(`issueId=${issue.identifier}&targetType=document_revision&includePayload=true`)).body.traces.find((row: any) => row.id === trace.id);
    expect(first.payload.body).toBe('# Report\n\nAll good.');
  });

  it('keeps at most 64 KiB of the text, cut between characters, and the whole size', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Long output' });
    const text = `ab${'€'.repeat(30_000)}`;
    const doc = await putDocument(agentApi, issue.id, 'long', { body: text });
    const trace = await voted(issue.id, { targetType: 'document_revision', targetId: doc.latestRevisionId, vote: 'up' });
    // 2 + 3 x 21,844 = 65,534 bytes; one more euro sign would make 65,537.
    expect(trace.payload.body).toBe(`ab${'€'.repeat(21_844)}`);
    expect([Buffer.byteLength(trace.payload.body), trace.payload.bodyBytes, trace.payload.bodyTruncated]).toEqual([65_534, 2 + 90_000, true]);
    const exact = await comment(agentApi, issue.id, 'x'.repeat(50_000));
    const doc2 = await putDocument(agentApi, issue.id, 'exact', { body: 'y'.repeat(65_536) });
    const fits = await voted(issue.id, { targetType: 'document_revision', targetId: doc2.latestRevisionId, vote: 'up' });
    expect([fits.payload.body.length, fits.payload.bodyTruncated]).toEqual([65_536, false]);
    const over = await putDocument(agentApi, issue.id, 'over', { body: 'z'.repeat(65_537) });
    const cut = await voted(issue.id, { targetType: 'document_revision', targetId: over.latestRevisionId, vote: 'up' });
    expect([cut.payload.body.length, cut.payload.bodyBytes, cut.payload.bodyTruncated]).toEqual([65_536, 65_537, true]);
    expect((await voted(issue.id, { targetType: 'comment', targetId: exact.id, vote: 'up' })).payload.bodyBytes).toBe(50_000);
  });

  it('keeps one vote per user and target: another board user of the company votes on their own', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Two voters' });
    const output = await comment(agentApi, issue.id, 'My answer');
    const mine = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up' });
    const theirs = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'down' }, 201, memberApi);
    expect(theirs.voterUserId).toBe(memberId);
    expect(theirs.id).not.toBe(mine.id);
    const listed = (await traces(`issueId=${issue.id}`)).body.traces;
    expect(listed.map((row: any) => [row.voterUserId, row.vote])).toEqual([[memberId, 'down'], ['local-board', 'up']]);
    const { rows } = await t.sql.query("select actor_id from activity_log where entity_id = $1 and action = 'feedback.voted'", [theirs.id]);
    expect(rows).toEqual([{ actor_id: memberId }]);
  });

  it("follows the instance's feedbackDataSharingPreference over the voter's shareable, and the voter's under prompt", async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Sharing rules' });
    const output = await comment(agentApi, issue.id, 'Shareable?');
    const setPreference = async (value: string) => expect((await t.api.patch('/api/instance/settings/general', { feedbackDataSharingPreference: value })).status).toBe(200);
    try {
      await setPreference('not_allowed');
      expect(await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up', shareable: true })).toMatchObject({ shareable: false, status: 'local' });
      await setPreference('allowed');
      expect(await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up', shareable: false }, 200)).toMatchObject({ shareable: true, status: 'pending' });
      await setPreference('prompt');
      expect(await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up', shareable: false }, 200)).toMatchObject({ shareable: false, status: 'local' });
      expect(await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up', shareable: true }, 200)).toMatchObject({ shareable: true, status: 'pending' });
    } finally {
      await setPreference('prompt');
    }
  });

  it('lets exactly one of two concurrent first votes of a user create the trace', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Double click' });
    const output = await comment(agentApi, issue.id, 'Racy output');
    const answers = await Promise.all(['up', 'down'].map((value) => vote(issue.id, { targetType: 'comment', targetId: output.id, vote: value })));
    expect(answers.map((res) => res.status).sort()).toEqual([200, 201]);
    expect(answers[0]!.body.id).toBe(answers[1]!.body.id);
    expect((await traces(`issueId=${issue.id}`)).body.traces).toHaveLength(1);
  });
});

describe('vote refusals', () => {
  it('refuses a target that is not agent output of the issue with 422, writing nothing', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Refusals' });
    const elsewhere = await createIssue(t.api, company.id, { title: 'Elsewhere' });
    const own = await comment(t.api, issue.id, 'A board comment');
    const foreignIssueComment = await comment(agentApi, elsewhere.id, 'Agent output on another issue');
    const gone = await comment(agentApi, issue.id, 'Deleted later');
    await t.sql.query('update plugin_work.issue_comments set deleted_at = now() where id = $1', [gone.id]);
    const byUser = await putDocument(t.api, issue.id, 'notes', { body: 'Board notes' });
    const byAgent = await putDocument(agentApi, elsewhere.id, 'notes', { body: 'Agent notes elsewhere' });
    const agentComment = await comment(agentApi, issue.id, 'Agent output here');
    const before = await counts();
    for (const [body, code] of [
      [{ targetType: 'comment', targetId: own.id }, 'not_agent_output'],
      [{ targetType: 'document_revision', targetId: byUser.latestRevisionId }, 'not_agent_output'],
      [{ targetType: 'comment', targetId: foreignIssueComment.id }, 'feedback_target_not_found'],
      [{ targetType: 'comment', targetId: gone.id }, 'feedback_target_not_found'],
      [{ targetType: 'comment', targetId: UNKNOWN_ID }, 'feedback_target_not_found'],
      [{ targetType: 'document_revision', targetId: byAgent.latestRevisionId }, 'feedback_target_not_found'],
      // The id of a comment is no revision id, and the other way round.
      [{ targetType: 'document_revision', targetId: agentComment.id }, 'feedback_target_not_found'],
    ] as const) {
      const res = await vote(issue.id, { ...body, vote: 'up' });
      expect([res.status, res.body.code, res.body.details], JSON.stringify(body)).toEqual([422, code, { field: 'targetId' }]);
    }
    const userRes = await vote(issue.id, { targetType: 'comment', targetId: own.id, vote: 'down' });
    expect(userRes.body.error).toBe('Only agent output takes feedback: this comment was written by a user');
    expect(await counts()).toEqual(before);
  });

  it('refuses bodies that break the schema with 400, and accepts the limits', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Schema' });
    const output = await comment(agentApi, issue.id, 'Output');
    const base = { targetType: 'comment', targetId: output.id, vote: 'up' };
    const before = await counts();
    for (const body of [
      {}, { ...base, vote: undefined }, { ...base, vote: 'meh' }, { ...base, targetType: 'issue' }, { ...base, targetId: 'c1' }, { ...base, targetId: `urn:uuid:${output.id}` },
      { ...base, reason: 'r'.repeat(2001) }, { ...base, reason: 5 }, { ...base, shareable: 'yes' },
    ]) {
      const res = await vote(issue.id, body);
      expect([res.status, res.body.code], JSON.stringify(body).slice(0, 80)).toEqual([400, 'validation_failed']);
    }
    expect(await counts()).toEqual(before);
    expect((await voted(issue.id, { ...base, reason: 'r'.repeat(2000) })).reason).toHaveLength(2000);
    const unknown = await vote(UNKNOWN_ID, base);
    expect([unknown.status, unknown.body.error]).toEqual([404, 'Issue not found']);
  });
});

describe('withdrawing', () => {
  it("deletes the caller's trace, records the withdrawal, and answers 404 when there is nothing to withdraw", async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Withdraw' });
    const output = await comment(agentApi, issue.id, 'Output to judge');
    const mine = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'down', reason: 'Wrong', shareable: true });
    const theirs = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up' }, 201, memberApi);
    const query = `targetType=comment&targetId=${output.id}`;
    const res = await withdraw(issue.identifier, query);
    expect([res.status, res.body]).toEqual([200, { id: mine.id, withdrawn: true }]);
    expect((await traces(`issueId=${issue.id}`)).body.traces.map((row: any) => row.id)).toEqual([theirs.id]);
    const activity = await feedbackActivity(mine.id);
    expect(activity.map((row) => row.action)).toEqual(['feedback.voted', 'feedback.vote_withdrawn']);
    expect(activity[1].details).toEqual({
      plugin: 'work', issueId: issue.id, identifier: issue.identifier, targetType: 'comment', targetId: output.id, previous: { vote: 'down', shareable: true, status: 'pending' },
    });
    expect(JSON.stringify(activity)).not.toContain('Wrong');

    const before = await counts();
    const elsewhere = await createIssue(t.api, company.id, { title: 'Not here' });
    for (const [ref, q] of [[issue.id, query], [issue.id, `targetType=document_revision&targetId=${output.id}`], [elsewhere.id, `targetType=comment&targetId=${theirs.targetId}`]]) {
      const again = await withdraw(ref!, q!);
      expect([again.status, again.body.code, again.body.error]).toEqual([404, 'feedback_not_found', 'You have no vote on this target of the issue']);
    }
    for (const q of ['', 'targetType=comment', `targetId=${output.id}`, `targetType=issue&targetId=${output.id}`, 'targetType=comment&targetId=1', `${query}&extra=1`]) {
      const bad = await withdraw(issue.id, q);
      expect([bad.status, bad.body.code], q).toEqual([400, 'validation_failed']);
    }
    expect(await counts()).toEqual(before);
    // Withdrawn, the target takes a new vote (a new trace); a vote on a comment deleted since is still withdrawn.
    expect((await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up' })).id).not.toBe(mine.id);
    await t.sql.query('update plugin_work.issue_comments set deleted_at = now() where id = $1', [output.id]);
    expect((await withdraw(issue.id, query, memberApi)).body).toEqual({ id: theirs.id, withdrawn: true });
  });
});

describe('the trace list', () => {
  let listCompany: any;
  let projectA: any;
  let issueA: any;
  let issueB: any;
  /** Traces made in order (oldest first). */
  const made: any[] = [];
  const ids = (res: any) => res.body.traces.map((row: any) => row.id);
  const newest = () => made.map((row) => row.id).reverse();
  const list = (query = '') => traces(query, t.api, listCompany.id);

  beforeAll(async () => {
    listCompany = await createCompany(t.api, { name: 'Trace List Co' });
    const writer = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, listCompany.id, { name: 'Writer' })).id));
    projectA = (await t.api.post(`/api/companies/${listCompany.id}/projects`, { name: 'A' })).body;
    issueA = await createIssue(t.api, listCompany.id, { title: 'In A', projectId: projectA.id });
    issueB = await createIssue(t.api, listCompany.id, { title: 'No project' });
    const doc = await putDocument(writer, issueB.id, 'doc', { body: 'document text' });
    const plan: [any, string, string, string, boolean][] = [
      [issueA, 'comment', 'up', 'a1', false], [issueA, 'comment', 'down', 'a2', true], [issueB, 'comment', 'up', 'b1', true],
      [issueB, 'document_revision', 'down', '', false], [issueA, 'comment', 'up', 'a3', false],
    ];
    for (const [issue, targetType, value, text, shareable] of plan) {
      const targetId = targetType === 'comment' ? (await comment(writer, issue.id, text)).id : doc.latestRevisionId;
      made.push(await voted(issue.id, { targetType, targetId, vote: value, shareable }));
    }
  });

  it('answers {traces, nextCursor}, newest first, without payloads unless asked', async () => {
    const res = await list();
    expect(res.status, res.text).toBe(200);
    expect([ids(res), res.body.nextCursor]).toEqual([newest(), null]);
    const { payload, ...summary } = made[0];
    expect(res.body.traces.at(-1)).toEqual(summary);
    expect(payload.body).toBe('a1');
    for (const query of ['', 'includePayload=false']) expect((await list(query)).body.traces.every((row: any) => !('payload' in row))).toBe(true);
    const withPayload = await list('includePayload=true');
    expect(withPayload.body.traces.map((row: any) => row.payload.body)).toEqual(['a3', 'document text', 'b1', 'a2', 'a1']);
    expect(withPayload.body.traces.at(-1)).toEqual(made[0]);
  });

  it('filters by target type, vote, status, sharing, issue (uuid or identifier) and project', async () => {
    const [a1, a2, b1, doc, a3] = made.map((row) => row.id);
    for (const [query, expected] of [
      ['targetType=comment', [a3, b1, a2, a1]], ['targetType=document_revision', [doc]], ['vote=down', [doc, a2]], ['vote=up', [a3, b1, a1]],
      ['status=pending', [b1, a2]], ['status=local', [a3, doc, a1]], ['sharedOnly=true', [b1, a2]], ['sharedOnly=false', newest()],
      [`issueId=${issueA.id}`, [a3, a2, a1]], [`issueId=${issueB.id.toUpperCase()}`, [doc, b1]], [`issueId=${issueB.identifier.toLowerCase()}`, [doc, b1]],
      [`projectId=${projectA.id}`, [a3, a2, a1]], [`issueId=${issueA.identifier}&vote=up&targetType=comment&status=local`, [a3, a1]],
      ['issueId=NOPE-1', []], [`issueId=${UNKNOWN_ID}`, []], [`projectId=${UNKNOWN_ID}`, []],
    ] as const) {
      const res = await list(query);
      expect([res.status, ids(res)], query).toEqual([200, expected]);
    }
  });

  it('filters by creation time: from inclusive, to exclusive; from after to is 400 invalid_range', async () => {
    const at = (i: number) => encodeURIComponent(made[i].createdAt);
    const [a1, a2, b1, doc] = made.map((row) => row.id);
    expect(ids(await list(`from=${at(1)}&to=${at(4)}`))).toEqual([doc, b1, a2]);
    expect(ids(await list(`to=${at(1)}`))).toEqual([a1]);
    expect(ids(await list(`from=${at(4)}`))).toEqual([made[4].id]);
    expect(ids(await list(`from=${at(2)}&to=${at(2)}`))).toEqual([]);
    // Any offset: the same instant.
    const shifted = new Date(Date.parse(made[3].createdAt)).toISOString().replace('Z', '+00:00');
    expect(ids(await list(`from=${encodeURIComponent(shifted)}&to=${at(4)}`))).toEqual([doc]);
    expect(ids(await list('from=1970-01-01T00:00:00Z&to=9999-12-31T23:59:59Z'))).toEqual(newest());
    const res = await list(`from=${at(3)}&to=${at(1)}`);
    expect([res.status, res.body.code, res.body.error]).toEqual([400, 'invalid_range', 'from must not be after to']);
  });

  it('pages with limit and an opaque cursor that an insert between pages does not shift', async () => {
    const first = await list('limit=2');
    expect([ids(first), typeof first.body.nextCursor]).toEqual([newest().slice(0, 2), 'string']);
    const writer = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, listCompany.id, { name: 'Late' })).id));
    const late = await voted(issueB.id, { targetType: 'comment', targetId: (await comment(writer, issueB.id, 'late')).id, vote: 'up' });
    const second = await list(`limit=2&cursor=${first.body.nextCursor}`);
    expect(ids(second)).toEqual(newest().slice(2, 4));
    const third = await list(`limit=2&cursor=${second.body.nextCursor}`);
    expect([ids(third), third.body.nextCursor]).toEqual([newest().slice(4), null]);
    // Filters page the same way.
    const up = await list('vote=up&limit=1');
    expect(ids(up)).toEqual([late.id]);
    expect(ids(await list(`vote=up&limit=5&cursor=${up.body.nextCursor}`))).toEqual([made[4].id, made[2].id, made[0].id]);
    await withdraw(issueB.id, `targetType=comment&targetId=${late.targetId}`);
    expect((await list('limit=200')).body.traces).toHaveLength(5);
  });

  it('refuses bad queries with 400', async () => {
    for (const [query, code] of [
      ['limit=0', 'validation_failed'], ['limit=201', 'validation_failed'], ['limit=ten', 'validation_failed'], ['targetType=issue', 'validation_failed'],
      ['vote=sideways', 'validation_failed'], ['status=delivered', 'validation_failed'], ['projectId=alpha', 'validation_failed'], [`projectId=urn:uuid:${UNKNOWN_ID}`, 'validation_failed'],
      [`issueId=${'X'.repeat(65)}`, 'validation_failed'], ['from=yesterday', 'validation_failed'], ['to=2024-13-01T00:00:00Z', 'validation_failed'],
      ['from=2024-01-01', 'validation_failed'], ['sharedOnly=maybe', 'validation_failed'], ['includePayload=please', 'validation_failed'],
      ['other=1', 'validation_failed'], ['cursor=zz', 'invalid_cursor'], [`cursor=${Buffer.from(`1|comment:${UNKNOWN_ID}`).toString('hex')}`, 'invalid_cursor'],
    ]) {
      const res = await list(query);
      expect([res.status, res.body.code], query).toEqual([400, code]);
    }
    expect((await list('limit=200')).status).toBe(200);
  });
});

describe('feedback scoping', () => {
  it('serves the board of the company only: agents get 403 board_required, a board user of another company 403, nothing written', async () => {
    const issue = await createIssue(t.api, company.id, { title: 'Scoped feedback' });
    const output = await comment(agentApi, issue.id, 'Scoped output');
    const trace = await voted(issue.id, { targetType: 'comment', targetId: output.id, vote: 'up', reason: 'secret reason' });
    const body = { targetType: 'comment', targetId: output.id, vote: 'down' };
    const query = `targetType=comment&targetId=${output.id}`;
    const before = await counts();
    for (const [api, code] of [[agentApi, 'board_required'], [outsiderApi, 'board_required'], [strangerApi, 'company_access_denied']] as const) {
      for (const res of [await traces('', api), await vote(issue.id, body, api), await withdraw(issue.id, query, api), await vote(issue.identifier, body, api)]) {
        expect([res.status, res.body.code]).toEqual([403, code]);
        expect(res.text).not.toContain('secret reason');
      }
    }
    expect(await counts()).toEqual(before);
    // A member of the company lists its traces, and votes and withdraws as themself.
    const listed = await traces(`issueId=${issue.id}`, memberApi);
    expect([listed.status, listed.body.traces.map((row: any) => row.id)]).toEqual([200, [trace.id]]);
    await voted(issue.id, body, 201, memberApi);
    expect((await withdraw(issue.id, query, memberApi)).status).toBe(200);
    expect((await traces(`issueId=${issue.id}`)).body.traces.map((row: any) => row.id)).toEqual([trace.id]);
    // Another company's list is its own: empty, whatever this company holds.
    expect((await traces('', t.api, other.id)).body).toEqual({ traces: [], nextCursor: null });
  });

  it("removes a deleted company's traces", async () => {
    const doomed = await createCompany(t.api, { name: 'Doomed Feedback' });
    const writer = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, doomed.id)).id));
    const issue = await createIssue(t.api, doomed.id, { title: 'Soon gone' });
    await voted(issue.id, { targetType: 'comment', targetId: (await comment(writer, issue.id, 'bye')).id, vote: 'up' });
    const count = async () => (await t.sql.query('select count(*)::int as n from plugin_work.feedback_traces where company_id = $1', [doomed.id])).rows[0].n;
    expect(await count()).toBe(1);
    const kept = (await traces()).body.traces.length;
    expect((await t.api.delete(`/api/companies/${doomed.id}`)).status).toBe(200);
    const until = Date.now() + 15_000;
    while ((await count()) !== 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await count()).toBe(0);
    expect((await traces()).body.traces).toHaveLength(kept);
  });
});
