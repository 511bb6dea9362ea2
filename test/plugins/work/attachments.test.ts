import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { sendLargeUpload } from '../../support/large-upload.ts';
import { artifactCounts, attach, createIssue, fileForm, ISO, PNG_1X1, UNKNOWN_ID, upload } from './artifact-helpers.ts';

/** Issue attachments of the work plugin: bytes in the kernel's blob store, rows in the plugin's table. */
let t: TestKernel;
let company: any;
let other: any;
let agent: any;
let agentKey: string;
let agentApi: Api;
let outsiderKey: string;
let outsiderApi: Api;

const TEN_MIB = 10 * 1024 * 1024;
/** A sample of every allowed type, with the bytes the kernel's signature check expects for raster images. */
const SAMPLES: Array<[string, Buffer | string, string]> = [
  ['image/png', PNG_1X1, 'dot.png'],
  ['image/jpeg', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('JFIF body')]), 'photo.jpg'],
  ['image/webp', Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x20, 0, 0, 0]), Buffer.from('WEBPVP8 body')]), 'photo.webp'],
  ['image/gif', Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64'), 'dot.gif'],
  ['application/pdf', '%PDF-1.4 minimal', 'report.pdf'],
  ['application/zip', Buffer.from([0x50, 0x4b, 0x05, 0x06, ...Array(18).fill(0)]), 'bundle.zip'],
  ['text/markdown', '# Notes', 'notes.md'],
  ['text/plain', 'plain words', 'notes.txt'],
  ['application/json', '{"ok":true}', 'data.json'],
  ['text/csv', 'a,b\n1,2\n', 'table.csv'],
  ['text/html', '<h1>Report</h1>', 'report.html'],
  ['video/mp4', Buffer.from('....ftypisom'), 'clip.mp4'],
  ['video/webm', Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), 'clip.webm'],
  ['video/quicktime', Buffer.from('....ftypqt  '), 'clip.mov'],
];

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Files Co' });
  other = await createCompany(t.api, { name: 'Other Files Co' });
  agent = await createAgent(t.api, company.id, { name: 'Uploader' });
  agentKey = await createAgentKey(t.api, agent.id);
  agentApi = t.api.as(agentKey);
  outsiderKey = await createAgentKey(t.api, (await createAgent(t.api, other.id)).id);
  outsiderApi = t.api.as(outsiderKey);
});
afterAll(async () => { await t?.stop(); });

const issueOf = (title: string, companyId = company.id) => createIssue(t.api, companyId, { title });
const blobOf = async (attachmentId: string) =>
  (await t.sql.query('select b.* from plugin_work.issue_attachments a join blobs b on b.id = a.blob_id where a.id = $1', [attachmentId])).rows[0];

describe('attachments', () => {
  it('stores an upload with its metadata, lists it and streams it back inline or as a download', async () => {
    const issue = await issueOf('Screenshots');
    const res = await upload(t.api, company.id, issue.id, PNG_1X1, 'image/png', 'screen.png');
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String), companyId: company.id, issueId: issue.id, filename: 'screen.png', contentType: 'image/png', byteSize: PNG_1X1.length,
      sha256: createHash('sha256').update(PNG_1X1).digest('hex'), contentPath: `/api/attachments/${res.body.id}/content`,
      createdByAgentId: null, createdByUserId: expect.any(String), runId: null, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    const blob = await blobOf(res.body.id);
    expect(blob).toMatchObject({ owner: 'work', company_id: company.id, content_type: 'image/png', sha256: res.body.sha256 });

    expect((await t.api.get(`/api/issues/${issue.identifier}/attachments`)).body).toEqual([res.body]);
    const inline = await fetch(`${t.url}${res.body.contentPath}`);
    expect(inline.status).toBe(200);
    expect(Buffer.from(await inline.arrayBuffer()).equals(PNG_1X1)).toBe(true);
    expect(inline.headers.get('content-type')).toBe('image/png');
    expect(inline.headers.get('content-disposition')).toMatch(/^inline; filename="screen.png"/);
    expect(inline.headers.get('x-content-type-options')).toBe('nosniff');
    const download = await fetch(`${t.url}${res.body.contentPath}?download=true`);
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="screen.png"/);

    const { rows } = await t.sql.query("select action, details from activity_log where entity_id = $1 and action = 'issue.attachment_added'", [issue.id]);
    expect(rows).toEqual([{ action: 'issue.attachment_added', details: expect.objectContaining({ attachmentId: res.body.id, filename: 'screen.png', byteSize: PNG_1X1.length }) }]);
  });

  it('takes every allowed type, by issue id or identifier, from the board and from agents of the company', async () => {
    const issue = await issueOf('All kinds');
    for (const [index, [type, data, filename]] of SAMPLES.entries()) {
      const api = index % 2 ? agentApi : t.api;
      const ref = index % 3 ? issue.id : issue.identifier.toLowerCase();
      const res = await upload(api, company.id, ref, data, type, filename);
      expect([res.status, res.body.contentType, res.body.filename], `${type}: ${res.text}`).toEqual([201, type, filename]);
      expect(res.body.createdByAgentId).toBe(index % 2 ? agent.id : null);
    }
    const listed = (await agentApi.get(`/api/issues/${issue.id}/attachments`)).body;
    expect(listed.map((a: any) => a.contentType)).toEqual(SAMPLES.map(([type]) => type));
  });

  it('never serves HTML inline: always an attachment, with nosniff and a sandboxing CSP', async () => {
    const issue = await issueOf('Report');
    const html = await attach(t.api, company.id, issue.id, '<script>alert(document.cookie)</script>', 'text/html', 'report.html');
    for (const suffix of ['', '?download=false', '?download=true']) {
      const res = await fetch(`${t.url}${html.contentPath}${suffix}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html');
      expect(res.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy')).toContain('sandbox');
    }
  });

  it('deletes the row and the blob, with an activity entry; the content is gone', async () => {
    const issue = await issueOf('Cleanup');
    const file = await attach(t.api, company.id, issue.id, 'temporary', 'text/plain', 'tmp.txt');
    const blobId = (await blobOf(file.id)).id;
    const res = await agentApi.delete(`/api/attachments/${file.id}`);
    expect([res.status, res.body]).toEqual([200, { id: file.id, deleted: true }]);
    expect((await t.sql.query('select count(*)::int as n from blobs where id = $1', [blobId])).rows[0].n).toBe(0);
    expect((await t.api.get(`/api/issues/${issue.id}/attachments`)).body).toEqual([]);
    for (const again of [await t.api.get(file.contentPath), await t.api.delete(`/api/attachments/${file.id}`)]) {
      expect([again.status, again.body.error]).toEqual([404, 'Attachment not found']);
    }
    const { rows } = await t.sql.query("select actor_type, details from activity_log where entity_id = $1 and action = 'issue.attachment_removed'", [issue.id]);
    expect(rows).toEqual([{ actor_type: 'agent', details: expect.objectContaining({ attachmentId: file.id, filename: 'tmp.txt', detachedWorkProductIds: [] }) }]);
  });
});

describe('attachment refusals', () => {
  it('answers an issue of another company in the path 404 Issue not found, keeping neither row nor blob', async () => {
    const foreign = await issueOf('Not yours', other.id);
    const before = await artifactCounts(t);
    for (const ref of [foreign.id, foreign.identifier, UNKNOWN_ID, 'NOPE-1']) {
      const res = await upload(t.api, company.id, ref, 'x', 'text/plain', 'x.txt');
      expect([res.status, res.body.code, res.body.error], ref).toEqual([404, 'not_found', 'Issue not found']);
    }
    expect(await artifactCounts(t)).toEqual(before);
  });

  it('refuses types off the list, mislabelled images and bodies that are not multipart with 415, storing nothing', async () => {
    const issue = await issueOf('Refusals');
    const before = await artifactCounts(t);
    for (const [data, type, code] of [
      ['MZ binary', 'application/x-msdownload', 'unsupported_media_type'],
      ['<svg/>', 'image/svg+xml', 'unsupported_media_type'],
      ['<html><script>alert(1)</script></html>', 'image/png', 'blob_type_mismatch'],
    ] as const) {
      const res = await upload(t.api, company.id, issue.id, data, type, 'f');
      expect([res.status, res.body.code], type).toEqual([415, code]);
    }
    const json = await t.api.post(`/api/companies/${company.id}/issues/${issue.id}/attachments`, { file: 'x' });
    expect([json.status, json.body.code]).toEqual([415, 'unsupported_media_type']);
    const wrongField = await t.api.post(`/api/companies/${company.id}/issues/${issue.id}/attachments`, undefined, { rawBody: (() => { const f = new FormData(); f.append('upload', new Blob(['x'], { type: 'text/plain' }), 'x.txt'); return f; })() });
    expect([wrongField.status, wrongField.body.code]).toEqual([400, 'bad_request']);
    expect(await artifactCounts(t)).toEqual(before);
  });

  it('refuses an upload over 10 MiB with 413 naming the limit, and names a lower company limit when one is set', async () => {
    const issue = await issueOf('Big files');
    const before = await artifactCounts(t);
    const url = `${t.url}/api/companies/${company.id}/issues/${issue.id}/attachments`;
    for (const contentLength of [true, false]) {
      const answer = await sendLargeUpload(url, { bytes: TEN_MIB + 512 * 1024, partType: 'application/zip', filename: 'big.zip', contentLength });
      expect({ contentLength, error: answer.error, status: answer.status }).toEqual({ contentLength, error: null, status: 413 });
      expect(answer.body).toMatchObject({ code: 'payload_too_large', error: expect.stringContaining(String(TEN_MIB)), details: { limitBytes: TEN_MIB } });
    }
    const set = await t.api.put(`/api/companies/${company.id}/upload-limit`, { maxBytes: 100 * 1024 });
    expect(set.status, set.text).toBe(200);
    try {
      const answer = await sendLargeUpload(url, { bytes: 200 * 1024, partType: 'text/plain', filename: 'medium.txt' });
      expect([answer.status, answer.body.code, answer.body.details]).toEqual([413, 'payload_too_large', { limitBytes: 100 * 1024 }]);
      expect(answer.body.error).toContain('102400');
    } finally {
      await t.api.put(`/api/companies/${company.id}/upload-limit`, { maxBytes: null });
    }
    expect(await artifactCounts(t)).toEqual(before);
    // Just under the limit is taken.
    const fits = await sendLargeUpload(url, { bytes: TEN_MIB - 1024, partType: 'application/zip', filename: 'fits.zip' });
    expect([fits.status, fits.body.byteSize]).toEqual([201, TEN_MIB - 1024]);
  });
});

describe('attachment scoping', () => {
  it('refuses an agent of another company with 403 on every route, even while it sends a body, and changes nothing', async () => {
    const issue = await issueOf('Private files');
    const file = await attach(agentApi, company.id, issue.id, 'secret contents', 'text/plain', 'secret.txt');
    const before = await artifactCounts(t);
    const big = await sendLargeUpload(`${t.url}/api/companies/${company.id}/issues/${issue.id}/attachments`, { bytes: 2 * 1024 * 1024, token: outsiderKey, partType: 'text/plain' });
    expect([big.error, big.status]).toEqual([null, 403]);
    for (const res of [
      await upload(outsiderApi, company.id, issue.id, 'planted', 'text/plain', 'planted.txt'),
      await outsiderApi.get(`/api/issues/${issue.id}/attachments`),
      await outsiderApi.get(file.contentPath),
      await outsiderApi.delete(`/api/attachments/${file.id}`),
    ]) {
      expect([res.status, res.body.code]).toEqual([403, 'company_access_denied']);
      expect(res.text).not.toContain('secret');
    }
    // Its own company's path with this company's issue is the "issue of another company" case: 404.
    const crossed = await upload(outsiderApi, other.id, issue.id, 'planted', 'text/plain', 'planted.txt');
    expect([crossed.status, crossed.body.error]).toEqual([404, 'Issue not found']);
    expect(await artifactCounts(t)).toEqual(before);
    const download = await agentApi.get(file.contentPath);
    expect([download.status, download.text]).toEqual([200, 'secret contents']);
  });
});

describe('uploads with an Idempotency-Key', () => {
  it('a retried upload answers the first attachment, keeps one row and one file, and deletes the file sent again', async () => {
    const issue = await issueOf('Uploaded twice');
    const path = `/api/companies/${company.id}/issues/${issue.id}/attachments`;
    const send = () => agentApi.post(path, undefined, { rawBody: fileForm('twice the same words', 'text/plain', 'twice.txt'), headers: { 'Idempotency-Key': 'upload-1' } });
    const blobCount = async () => (await t.sql.query('select count(*)::int as n from blobs where company_id = $1', [company.id])).rows[0].n;
    const first = await send();
    expect(first.status, first.text).toBe(201);
    const blobs = await blobCount();
    const retry = await send();
    expect([retry.status, retry.headers.get('x-idempotent-replayed'), retry.body.id], retry.text).toEqual([200, 'true', first.body.id]);
    expect((await t.sql.query('select count(*)::int as n from plugin_work.issue_attachments where issue_id = $1', [issue.id])).rows[0].n).toBe(1);
    expect(await blobCount()).toBe(blobs);
    const other = await agentApi.post(path, undefined, { rawBody: fileForm('other words', 'text/plain', 'twice.txt'), headers: { 'Idempotency-Key': 'upload-1' } });
    expect([other.status, other.body.code]).toEqual([409, 'idempotency_key_reused']);
    expect(await blobCount()).toBe(blobs);
  });
});
