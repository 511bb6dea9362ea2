import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Api, TestKernel } from '../../support/harness.ts';
import { artifactCounts, attach, createIssue, inRun, ISO, startWorkWorld, UNKNOWN_ID } from './artifact-helpers.ts';

/** Work products of the work plugin: what work on an issue produced, one primary per issue. */
let t: TestKernel;
let company: any;
let agent: any;
let agentApi: Api;
let outsiderApi: Api;

beforeAll(async () => {
  ({ t, company, agent, agentApi, outsiderApi } = await startWorkWorld('Products Co', 'Shipper'));
});
afterAll(async () => { await t?.stop(); });

const issueOf = (title: string) => createIssue(t.api, company.id, { title });
async function create(issueId: string, body: Record<string, unknown>, api: Api = t.api) {
  const res = await api.post(`/api/issues/${issueId}/work-products`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
const primaries = async (issueId: string) => (await t.api.get(`/api/issues/${issueId}/work-products`)).body.filter((p: any) => p.isPrimary).map((p: any) => p.id);

describe('work products', () => {
  it('creates with defaults, lists oldest first and patches, with activity', async () => {
    const issue = await issueOf('Ship the fix');
    const pr = await create(issue.id, { type: 'pull_request', title: 'Fix login', url: 'https://git.example.com/acme/app/pull/7', externalId: '7', metadata: { additions: 12 } });
    expect(pr).toEqual({
      id: expect.any(String), companyId: company.id, issueId: issue.id, type: 'pull_request', status: 'active', reviewState: 'none', title: 'Fix login',
      url: 'https://git.example.com/acme/app/pull/7', externalId: '7', isPrimary: false, metadata: { additions: 12 }, attachmentId: null, contentPath: null,
      createdByAgentId: null, createdByUserId: expect.any(String), runId: null, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    const branch = await create(issue.identifier, { type: 'branch', title: 'fix/login', status: 'draft' });
    const patched = await t.api.patch(`/api/work-products/${pr.id}`, { status: 'ready_for_review', reviewState: 'needs_board_review', metadata: null });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ status: 'ready_for_review', reviewState: 'needs_board_review', metadata: null, title: 'Fix login' });
    expect((await t.api.get(`/api/issues/${issue.id}/work-products`)).body.map((p: any) => p.id)).toEqual([pr.id, branch.id]);
    const { rows } = await t.sql.query("select action, details from activity_log where entity_id = $1 and action like 'issue.work_product_%' order by seq", [issue.id]);
    expect(rows.map((r: any) => r.action)).toEqual(['issue.work_product_created', 'issue.work_product_created', 'issue.work_product_updated']);
    expect(rows[2].details).toMatchObject({
      workProductId: pr.id, changes: { status: 'ready_for_review', reviewState: 'needs_board_review', metadata: null },
      previous: { status: 'active', reviewState: 'none', metadata: { additions: 12 } },
    });
  });

  it('answers a patch naming only fields it does not know with the product unchanged', async () => {
    const issue = await issueOf('Patched with nothing');
    const product = await create(issue.id, { type: 'branch', title: 'feature/x' });
    const res = await t.api.patch(`/api/work-products/${product.id}`, { somethingElse: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(product);
  });

  it('keeps at most one primary per issue: making one primary clears the others', async () => {
    const issue = await issueOf('Previews');
    const a = await create(issue.id, { type: 'preview_url', title: 'Preview A', url: 'http://preview-a.example.com', isPrimary: true });
    const b = await create(issue.id, { type: 'preview_url', title: 'Preview B', url: 'http://preview-b.example.com', isPrimary: true });
    expect(await primaries(issue.id)).toEqual([b.id]);
    expect((await t.api.patch(`/api/work-products/${a.id}`, { isPrimary: true })).body.isPrimary).toBe(true);
    expect(await primaries(issue.id)).toEqual([a.id]);
    expect((await t.api.patch(`/api/work-products/${a.id}`, { isPrimary: false })).body.isPrimary).toBe(false);
    expect(await primaries(issue.id)).toEqual([]);
    // Concurrent primaries: all are stored, one stays primary.
    const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => t.api.post(`/api/issues/${issue.id}/work-products`, { type: 'commit', title: `c${i}`, isPrimary: true })));
    expect(racing.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect(await primaries(issue.id)).toHaveLength(1);
    // Another issue's primary is left alone.
    const elsewhere = await issueOf('Elsewhere');
    const own = await create(elsewhere.id, { type: 'commit', title: 'own', isPrimary: true });
    await create(issue.id, { type: 'commit', title: 'again', isPrimary: true });
    expect(await primaries(elsewhere.id)).toEqual([own.id]);
  });

  it('points at an attachment of the same issue, whose content path it shows; deleting the file leaves the product', async () => {
    const issue = await issueOf('Deliverable');
    const file = await attach(t.api, company.id, issue.id, '%PDF-1.4 report', 'application/pdf', 'report.pdf');
    const { api, runId } = await inRun(t, agent.id, company.id);
    const product = await create(issue.id, { type: 'artifact', title: 'Final report', attachmentId: file.id }, api);
    expect(product).toMatchObject({ attachmentId: file.id, contentPath: `/api/attachments/${file.id}/content`, createdByAgentId: agent.id, runId });
    expect((await t.api.delete(`/api/attachments/${file.id}`)).status).toBe(200);
    const [after] = (await t.api.get(`/api/issues/${issue.id}/work-products`)).body;
    expect(after).toMatchObject({ id: product.id, attachmentId: null, contentPath: null, title: 'Final report' });
    const { rows } = await t.sql.query("select details from activity_log where entity_id = $1 and action = 'issue.attachment_removed'", [issue.id]);
    expect(rows[0].details.detachedWorkProductIds).toEqual([product.id]);
  });
});

describe('work product refusals', () => {
  it('refuses bad input with 4xx and the JSON error body, writing nothing', async () => {
    const issue = await issueOf('Bad products');
    const otherIssue = await issueOf('Other issue');
    const foreignFile = await attach(t.api, company.id, otherIssue.id, 'x', 'text/plain', 'x.txt');
    const existing = await create(issue.id, { type: 'commit', title: 'abc123' });
    const before = await artifactCounts(t);
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, 'validation_failed'],
      [{ type: 'commit' }, 400, 'validation_failed'],
      [{ type: 'commit', title: '' }, 400, 'validation_failed'],
      [{ type: 'binary', title: 'x' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', status: 'done' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', reviewState: 'pending' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', url: 'ftp://example.com/file' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', url: 'javascript:alert(1)' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', url: 'https://' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', metadata: [1, 2] }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', metadata: 'text' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', metadata: { blob: 'm'.repeat(16 * 1024) } }, 400, 'metadata_too_large'],
      [{ type: 'commit', title: 'x', metadata: { blob: 'é'.repeat(8200) } }, 400, 'metadata_too_large'],
      [{ type: 'commit', title: 'x', attachmentId: 'nope' }, 400, 'validation_failed'],
      [{ type: 'commit', title: 'x', attachmentId: foreignFile.id }, 422, 'attachment_not_found'],
      [{ type: 'commit', title: 'x', attachmentId: UNKNOWN_ID }, 422, 'attachment_not_found'],
    ];
    for (const [body, status, code] of cases) {
      const res = await t.api.post(`/api/issues/${issue.id}/work-products`, body);
      expect([res.status, res.body.code], JSON.stringify(body).slice(0, 80)).toEqual([status, code]);
      expect(typeof res.body.error).toBe('string');
    }
    for (const [body, status, code] of [
      [{}, 400, 'validation_failed'], [{ title: null }, 400, 'validation_failed'], [{ url: 'file:///etc/passwd' }, 400, 'validation_failed'],
      [{ attachmentId: foreignFile.id }, 422, 'attachment_not_found'],
    ] as Array<[unknown, number, string]>) {
      const res = await t.api.patch(`/api/work-products/${existing.id}`, body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    expect(await artifactCounts(t)).toEqual(before);
    // Just under the metadata limit is taken.
    const fits = await create(issue.id, { type: 'commit', title: 'fits', metadata: { blob: 'm'.repeat(16 * 1024 - 20) } });
    expect(fits.metadata.blob).toHaveLength(16 * 1024 - 20);
  });

  it('answers 404 for unknown ids and refuses an agent of another company with 403, changing nothing', async () => {
    const issue = await issueOf('Scoped products');
    const product = await create(issue.id, { type: 'branch', title: 'main' }, agentApi);
    expect(product.createdByAgentId).toBe(agent.id);
    expect((await agentApi.patch(`/api/work-products/${product.id}`, { status: 'merged' })).body.status).toBe('merged');
    expect((await agentApi.get(`/api/issues/${issue.id}/work-products`)).body).toHaveLength(1);
    for (const res of [await t.api.patch(`/api/work-products/${UNKNOWN_ID}`, { status: 'closed' }), await t.api.patch('/api/work-products/nope', { status: 'closed' })]) {
      expect([res.status, res.body.error]).toEqual([404, 'Work product not found']);
    }
    expect((await t.api.get(`/api/issues/${UNKNOWN_ID}/work-products`)).status).toBe(404);
    const before = await artifactCounts(t);
    for (const res of [
      await outsiderApi.get(`/api/issues/${issue.id}/work-products`),
      await outsiderApi.post(`/api/issues/${issue.id}/work-products`, { type: 'branch', title: 'planted' }),
      await outsiderApi.patch(`/api/work-products/${product.id}`, { title: 'hijacked' }),
    ]) {
      expect([res.status, res.body.code]).toEqual([403, 'company_access_denied']);
      expect(res.text).not.toContain('main');
    }
    expect(await artifactCounts(t)).toEqual(before);
    expect((await t.api.get(`/api/issues/${issue.id}/work-products`)).body[0]).toMatchObject({ title: 'main', status: 'merged' });
  });
});
