import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, TestKernel } from '../../support/harness.ts';
import { artifactCounts, createIssue, inRun, ISO, outbox, putDocument, startWorkWorld, UNKNOWN_ID } from './artifact-helpers.ts';

/** Issue documents of the work plugin: revisions, optimistic concurrency, restore, limits and scoping. */
let t: TestKernel;
let company: any;
let agent: any;
let agentApi: Api;
let outsiderApi: Api;

beforeAll(async () => {
  ({ t, company, agent, agentApi, outsiderApi } = await startWorkWorld('Docs Co', 'Writer'));
});
afterAll(async () => { await t?.stop(); });

const issueOf = (title: string) => createIssue(t.api, company.id, { title });

describe('documents', () => {
  it('creates a document as revision 1 (201), then appends revisions based on the current one (200)', async () => {
    const issue = await issueOf('Plan the launch');
    const created = await putDocument(t.api, issue.id, 'plan', { body: '# Plan\n\nFirst draft', title: 'Launch plan', changeSummary: 'draft' });
    expect(created).toMatchObject({
      key: 'plan', title: 'Launch plan', format: 'markdown', body: '# Plan\n\nFirst draft', issueId: issue.id, companyId: company.id,
      latestRevisionNumber: 1, latestRevisionId: expect.any(String), createdByUserId: expect.any(String), createdByAgentId: null,
    });
    expect(created.updatedAt).toMatch(ISO);
    const second = await putDocument(t.api, issue.id, 'plan', { body: '# Plan\n\nSecond draft', baseRevisionId: created.latestRevisionId }, 200);
    // An absent title keeps the current one.
    expect(second).toMatchObject({ id: created.id, title: 'Launch plan', latestRevisionNumber: 2, body: '# Plan\n\nSecond draft' });
    expect(second.latestRevisionId).not.toBe(created.latestRevisionId);
    const cleared = await putDocument(t.api, issue.identifier, 'plan', { body: 'Third', title: null, baseRevisionId: second.latestRevisionId }, 200);
    expect([cleared.title, cleared.latestRevisionNumber]).toEqual([null, 3]);

    expect((await t.api.get(`/api/issues/${issue.id}/documents/plan`)).body).toEqual(cleared);
    const listed = await t.api.get(`/api/issues/${issue.identifier}/documents`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([{
      id: created.id, companyId: company.id, issueId: issue.id, key: 'plan', title: null, format: 'markdown',
      latestRevisionId: cleared.latestRevisionId, latestRevisionNumber: 3, createdAt: created.createdAt, updatedAt: cleared.updatedAt,
    }]);
    const revisions = (await t.api.get(`/api/issues/${issue.id}/documents/plan/revisions`)).body;
    expect(revisions.map((r: any) => [r.revisionNumber, r.body, r.title, r.changeSummary])).toEqual([
      [3, 'Third', null, null], [2, '# Plan\n\nSecond draft', 'Launch plan', null], [1, '# Plan\n\nFirst draft', 'Launch plan', 'draft'],
    ]);
    expect(revisions.map((r: any) => r.id)).toEqual([cleared.latestRevisionId, second.latestRevisionId, created.latestRevisionId]);
    expect(revisions[0]).toMatchObject({ documentId: created.id, createdByUserId: expect.any(String), createdByAgentId: null, runId: null, createdAt: expect.stringMatching(ISO) });

    const { rows } = await t.sql.query("select action, details from activity_log where entity_id = $1 and action like 'issue.document_%' order by seq", [issue.id]);
    expect(rows.map((r: any) => r.action)).toEqual(['issue.document_created', 'issue.document_updated', 'issue.document_updated']);
    expect(rows[0].details).toMatchObject({ key: 'plan', documentId: created.id, revisionNumber: 1, revisionId: created.latestRevisionId, identifier: issue.identifier });
    const events = await outbox(t, 'work.issue.document_updated', issue.id);
    expect(events.map((e) => [e.revisionNumber, e.created])).toEqual([[1, true], [2, false], [3, false]]);
    expect(events[0]).toEqual({ issueId: issue.id, identifier: issue.identifier, documentId: created.id, key: 'plan', revisionId: created.latestRevisionId, revisionNumber: 1, created: true });
  });

  it('answers a stale, missing or premature baseRevisionId 409 document_revision_conflict naming the current revision, writing nothing', async () => {
    const issue = await issueOf('Conflicts');
    const first = await putDocument(t.api, issue.id, 'notes', { body: 'one' });
    const second = await putDocument(t.api, issue.id, 'notes', { body: 'two', baseRevisionId: first.latestRevisionId }, 200);
    const before = await artifactCounts(t);
    for (const body of [{ body: 'stale', baseRevisionId: first.latestRevisionId }, { body: 'blind' }, { body: 'null base', baseRevisionId: null }]) {
      const res = await t.api.put(`/api/issues/${issue.id}/documents/notes`, body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([409, 'document_revision_conflict']);
      expect(res.body.details).toEqual({ currentRevisionId: second.latestRevisionId, currentRevisionNumber: 2 });
    }
    const premature = await t.api.put(`/api/issues/${issue.id}/documents/not-yet`, { body: 'x', baseRevisionId: first.latestRevisionId });
    expect([premature.status, premature.body.code, premature.body.details]).toEqual([409, 'document_revision_conflict', { currentRevisionId: null, currentRevisionNumber: null }]);
    expect(await artifactCounts(t)).toEqual(before);
    expect((await t.api.get(`/api/issues/${issue.id}/documents/notes`)).body.body).toBe('two');
  });

  it('lets exactly one of two concurrent writes based on the same revision win', async () => {
    const issue = await issueOf('Race');
    const base = await putDocument(t.api, issue.id, 'spec', { body: 'base' });
    for (let round = 0; round < 3; round++) {
      const current = (await t.api.get(`/api/issues/${issue.id}/documents/spec`)).body;
      const answers = await Promise.all(['left', 'right'].map((side) =>
        t.api.put(`/api/issues/${issue.id}/documents/spec`, { body: `${side} ${round}`, baseRevisionId: current.latestRevisionId })));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
      const winner = answers.find((r) => r.status === 200)!.body;
      const loser = answers.find((r) => r.status === 409)!.body;
      expect(loser.details.currentRevisionId).toBe(winner.latestRevisionId);
      expect((await t.api.get(`/api/issues/${issue.id}/documents/spec`)).body).toMatchObject({ body: winner.body, latestRevisionNumber: round + 2 });
    }
    const revisions = (await t.api.get(`/api/issues/${issue.id}/documents/spec/revisions`)).body;
    expect(revisions.map((r: any) => r.revisionNumber)).toEqual([4, 3, 2, 1]);
    expect(revisions.at(-1).id).toBe(base.latestRevisionId);
  });

  it('restores an old revision as a new one: history only grows', async () => {
    const issue = await issueOf('Restore');
    const v1 = await putDocument(t.api, issue.id, 'readme', { body: 'original text', title: 'Readme' });
    const v2 = await putDocument(t.api, issue.id, 'readme', { body: 'vandalised', baseRevisionId: v1.latestRevisionId }, 200);
    const old = (await t.api.get(`/api/issues/${issue.id}/documents/readme/revisions`)).body.find((r: any) => r.revisionNumber === 1);
    const restored = await putDocument(t.api, issue.id, 'readme', { body: old.body, title: old.title, changeSummary: 'Restore revision 1', baseRevisionId: v2.latestRevisionId }, 200);
    expect(restored).toMatchObject({ body: 'original text', title: 'Readme', latestRevisionNumber: 3 });
    const revisions = (await t.api.get(`/api/issues/${issue.id}/documents/readme/revisions`)).body;
    expect(revisions.map((r: any) => [r.revisionNumber, r.body])).toEqual([[3, 'original text'], [2, 'vandalised'], [1, 'original text']]);
  });

  it('records the agent and its run on revisions written from a run', async () => {
    const issue = await issueOf('Agent notes');
    const { api, runId } = await inRun(t, agent.id, company.id);
    const doc = await putDocument(api, issue.id, 'findings', { body: 'Found it' });
    expect(doc).toMatchObject({ createdByAgentId: agent.id, createdByUserId: null, updatedByAgentId: agent.id });
    const [revision] = (await t.api.get(`/api/issues/${issue.id}/documents/findings/revisions`)).body;
    expect(revision).toMatchObject({ createdByAgentId: agent.id, createdByUserId: null, runId });
    const { rows } = await t.sql.query("select actor_type, run_id from activity_log where entity_id = $1 and action = 'issue.document_created'", [issue.id]);
    expect(rows).toEqual([{ actor_type: 'agent', run_id: runId }]);
  });
});

describe('document limits and bad input', () => {
  it('refuses bad keys and bodies with 400 and the JSON error body, writing nothing', async () => {
    const issue = await issueOf('Limits');
    const before = await artifactCounts(t);
    const badKeys = ['Plan', '-plan', '_plan', 'plan.md', 'a'.repeat(65), 'pl%20an', 'ünï'];
    for (const key of badKeys) {
      for (const res of [
        await t.api.put(`/api/issues/${issue.id}/documents/${encodeURIComponent(key)}`, { body: 'x' }),
        await t.api.get(`/api/issues/${issue.id}/documents/${encodeURIComponent(key)}`),
        await t.api.get(`/api/issues/${issue.id}/documents/${encodeURIComponent(key)}/revisions`),
      ]) {
        expect([res.status, res.body.code], key).toEqual([400, 'invalid_document_key']);
        expect(res.body.error).toContain('at most 64 characters');
      }
    }
    const cases: unknown[] = [
      {}, { body: null }, { body: 'x'.repeat(524_289) }, { body: 'x', title: 't'.repeat(201) }, { body: 'x', changeSummary: 's'.repeat(501) },
      { body: 'x', baseRevisionId: 'not-a-uuid' }, { body: 'x', format: 'html' },
    ];
    for (const body of cases) {
      const res = await t.api.put(`/api/issues/${issue.id}/documents/plan`, body);
      expect([res.status, res.body.code], JSON.stringify(body).slice(0, 80)).toEqual([400, 'validation_failed']);
    }
    expect(await artifactCounts(t)).toEqual(before);
    // The limits themselves are accepted.
    const longest = 'a'.repeat(64);
    const doc = await putDocument(t.api, issue.id, longest, { body: 'y'.repeat(524_288), title: 't'.repeat(200), changeSummary: 's'.repeat(500) });
    expect([doc.key, doc.body.length]).toEqual([longest, 524_288]);
    expect((await putDocument(t.api, issue.id, '0-a_b', { body: '' })).body).toBe('');
  });

  it('answers 404 for an unknown document and an unknown issue', async () => {
    const issue = await issueOf('Empty');
    expect((await t.api.get(`/api/issues/${issue.id}/documents`)).body).toEqual([]);
    for (const path of [`/api/issues/${issue.id}/documents/nothing`, `/api/issues/${issue.id}/documents/nothing/revisions`]) {
      const res = await t.api.get(path);
      expect([res.status, res.body.code, res.body.error]).toEqual([404, 'document_not_found', 'Document not found']);
    }
    for (const res of [await t.api.get(`/api/issues/${UNKNOWN_ID}/documents`), await t.api.put(`/api/issues/${UNKNOWN_ID}/documents/plan`, { body: 'x' })]) {
      expect([res.status, res.body.error]).toEqual([404, 'Issue not found']);
    }
  });
});

describe('document scoping', () => {
  it('serves the board and agents of the company, and refuses an agent of another company with 403, writing nothing', async () => {
    const issue = await issueOf('Scoped');
    const byAgent = await putDocument(agentApi, issue.id, 'plan', { body: 'by the agent' });
    expect(byAgent.createdByAgentId).toBe(agent.id);
    expect((await t.api.get(`/api/issues/${issue.id}/documents/plan`)).body.body).toBe('by the agent');
    expect((await agentApi.get(`/api/issues/${issue.id}/documents`)).status).toBe(200);
    const before = await artifactCounts(t);
    for (const res of [
      await outsiderApi.get(`/api/issues/${issue.id}/documents`),
      await outsiderApi.get(`/api/issues/${issue.identifier}/documents/plan`),
      await outsiderApi.get(`/api/issues/${issue.id}/documents/plan/revisions`),
      await outsiderApi.put(`/api/issues/${issue.id}/documents/plan`, { body: 'hijacked', baseRevisionId: byAgent.latestRevisionId }),
      await outsiderApi.put(`/api/issues/${issue.id}/documents/other`, { body: 'planted' }),
    ]) {
      expect([res.status, res.body.code]).toEqual([403, 'company_access_denied']);
      expect(res.text).not.toContain('by the agent');
    }
    expect(await artifactCounts(t)).toEqual(before);
  });
});
