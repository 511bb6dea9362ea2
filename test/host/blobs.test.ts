import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';
import { sendLargeUpload } from '../support/large-upload.ts';
import { expectValidDocument, fetchDocument } from '../support/openapi.ts';
import { agentToken, createCompany, insertAgent, PNG_1X1 } from '../kernel/companies-fixtures.ts';

/**
 * Blobs through plugin routes: uploads streamed into the store by the kernel, downloads
 * streamed by the kernel, ctx.blobs, and the attacks on them (another company's or another
 * plugin's handle, oversized, slow and mislabelled uploads, refusals before the body is read).
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/blob-fx', import.meta.url));
const ROUTE_LIMIT = 6 * 1024 * 1024;
let t: TestKernel;
let peer: PeerKernel;
let slowPeer: PeerKernel;
let companyA: any;
let companyB: any;
let agentOfB: string;

const base = (companyId: string, plugin = 'blob-fx') => `/api/plugins/${plugin}/companies/${companyId}`;
function form(data: Buffer | string, type: string, filename = 'file.bin', field = 'file'): FormData {
  const body = new FormData();
  body.append(field, new Blob([typeof data === "string" ? data : new Uint8Array(data)], { type }), filename);
  return body;
}
const upload = (companyId: string, data: Buffer | string, type: string, filename?: string) =>
  t.api.post(`${base(companyId)}/files`, undefined, { rawBody: form(data, type, filename) });
const blobCount = async (companyId: string) => (await t.sql.query('select count(*)::int as n from blobs where company_id = $1', [companyId])).rows[0].n as number;

beforeAll(async () => {
  t = await startTestKernel({ limits: { attachmentBytes: 16 * 1024 * 1024 } });
  await installAndEnable(t, FIXTURE);
  await installAndEnable(t, await pluginVariant(FIXTURE, (manifest) => { manifest.key = 'blob-other'; manifest.displayName = 'Blob other'; }));
  companyA = await createCompany(t, { name: 'Blob A' });
  companyB = await createCompany(t, { name: 'Blob B' });
  agentOfB = await agentToken(t, await insertAgent(t, companyB.id), companyB.id);
  peer = await startPeerKernel(t);
  slowPeer = await startPeerKernel(t, { limits: { attachmentBytes: 16 * 1024 * 1024, uploadSeconds: 1 } });
});
afterAll(async () => {
  await slowPeer?.stop();
  await peer?.stop();
  await t?.stop();
});

describe('plugin upload and download routes', () => {
  it('stream an upload into the store and hand the plugin its metadata, then stream it back with safe headers', async () => {
    const data = Buffer.concat([PNG_1X1, Buffer.alloc(700 * 1024, 7)]);
    const res = await upload(companyA.id, data, 'image/png', 'chart.png');
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String), companyId: companyA.id, owner: 'blob-fx', contentType: 'image/png', byteSize: data.length,
      sha256: createHash('sha256').update(data).digest('hex'), filename: 'chart.png', createdAt: expect.any(String),
    });
    const chunks = await t.sql.query('select count(*)::int as n, max(length(data))::int as largest from blob_chunks where blob_id = $1', [res.body.id]);
    expect(chunks.rows[0]).toEqual({ n: 3, largest: 256 * 1024 });
    const download = await fetch(`${t.url}${base(companyA.id)}/files/${res.body.id}`);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(data)).toBe(true);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(download.headers.get('content-length')).toBe(String(data.length));
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="chart.png"/);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('serve a blob uploaded through one kernel from a peer kernel on the same database', async () => {
    const res = await t.api.post(`${base(companyA.id)}/files`, undefined, { rawBody: form('shared across processes', 'text/plain', 'a.txt') });
    expect(res.status, res.text).toBe(201);
    const download = await fetch(`${peer.url}${base(companyA.id)}/files/${res.body.id}?disposition=inline`);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('shared across processes');
    expect(download.headers.get('content-disposition')).toMatch(/^inline;/);
  });

  it('always send types a browser could run as an attachment, with nosniff', async () => {
    const res = await upload(companyA.id, '<script>alert(1)</script>', 'text/html', 'x.html');
    expect(res.status, res.text).toBe(201);
    const download = await fetch(`${t.url}${base(companyA.id)}/files/${res.body.id}?disposition=inline`);
    expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-security-policy')).toContain('sandbox');
  });

  it("refuse another company's handle as an unknown id (download, get, readText)", async () => {
    const res = await upload(companyA.id, 'secret of A', 'text/plain');
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const id of [res.body.id, unknown]) {
      const download = await t.api.get(`${base(companyB.id)}/files/${id}`);
      expect({ id, status: download.status, code: download.body.code }).toEqual({ id, status: 404, code: 'blob_not_found' });
      expect((await t.api.get(`${base(companyB.id)}/files/${id}/meta`)).body).toEqual({ blob: null });
      expect((await t.api.get(`${base(companyB.id)}/files/${id}/text`)).body).toMatchObject({ code: 'blob_not_found' });
    }
  });

  it("refuse another plugin's handle until the owner links it, and let the linked plugin only let go of it", async () => {
    const res = await upload(companyA.id, 'owned by blob-fx', 'text/plain');
    expect((await t.api.get(`${base(companyA.id, 'blob-other')}/files/${res.body.id}`)).status).toBe(404);
    expect((await t.api.post(`${base(companyA.id, 'blob-other')}/files/${res.body.id}/link`, { to: 'blob-other' })).body).toMatchObject({ code: 'blob_not_found' });
    expect((await t.api.post(`${base(companyA.id)}/files/${res.body.id}/link`, { to: 'blob-other' })).body).toEqual({ linked: true });
    expect((await t.api.get(`${base(companyA.id, 'blob-other')}/files/${res.body.id}/text`)).body).toEqual({ text: 'owned by blob-fx' });
    expect((await t.api.delete(`${base(companyA.id, 'blob-other')}/files/${res.body.id}`)).body).toEqual({ deleted: true });
    expect((await t.api.get(`${base(companyA.id, 'blob-other')}/files/${res.body.id}`)).status).toBe(404);
    expect((await t.api.get(`${base(companyA.id)}/files/${res.body.id}/text`)).body).toEqual({ text: 'owned by blob-fx' });
  });

  it('create text blobs, read them back and delete them', async () => {
    const note = await t.api.post(`${base(companyA.id)}/notes`, { text: '# Minutes' });
    expect(note.status, note.text).toBe(201);
    expect(note.body).toMatchObject({ owner: 'blob-fx', contentType: 'text/markdown', byteSize: 9, filename: 'note.md' });
    expect((await t.api.get(`${base(companyA.id)}/files/${note.body.id}/text`)).body).toEqual({ text: '# Minutes' });
    expect((await t.api.delete(`${base(companyA.id)}/files/${note.body.id}`)).body).toEqual({ deleted: true });
    expect((await t.api.get(`${base(companyA.id)}/files/${note.body.id}/meta`)).body).toEqual({ blob: null });
  });

  it('keep nothing of an upload whose handler fails', async () => {
    const before = await blobCount(companyA.id);
    const res = await t.api.post(`${base(companyA.id)}/failing`, undefined, { rawBody: form('dropped', 'text/plain') });
    expect(res.status).toBe(409);
    expect(await blobCount(companyA.id)).toBe(before);
  });
});

describe('the API reference', () => {
  it('describes upload routes as multipart and download routes as binary', async () => {
    const document = await fetchDocument(t.api);
    await expectValidDocument(document);
    const uploadOp = document.paths['/api/plugins/blob-fx/companies/{companyId}/files'].post;
    expect(Object.keys(uploadOp.requestBody.content)).toEqual(['multipart/form-data']);
    expect(Object.keys(uploadOp.responses)).toEqual(expect.arrayContaining(['408', '413', '415']));
    const downloadOp = document.paths['/api/plugins/blob-fx/companies/{companyId}/files/{id}'].get;
    expect(Object.keys(downloadOp.responses['200'].content)).toEqual(['application/octet-stream']);
  });
});

describe('upload attacks', () => {
  it('refuse an oversized upload with 413 JSON naming the effective limit, by Content-Length and streamed without one', async () => {
    const before = await blobCount(companyA.id);
    for (const contentLength of [true, false]) {
      const answer = await sendLargeUpload(`${t.url}${base(companyA.id)}/files`, { bytes: ROUTE_LIMIT + 1024 * 1024, contentLength });
      expect({ contentLength, error: answer.error, status: answer.status }).toEqual({ contentLength, error: null, status: 413 });
      expect(answer.body).toMatchObject({ code: 'payload_too_large', error: expect.stringContaining(String(ROUTE_LIMIT)) });
    }
    expect(await blobCount(companyA.id)).toBe(before);
  });

  it("apply a company's own limit, set by an instance admin, and name it in the 413", async () => {
    const set = await t.api.put(`/api/companies/${companyB.id}/upload-limit`, { maxBytes: 100 * 1024 });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toEqual({ companyId: companyB.id, maxBytes: 102400, effectiveBytes: 102400, instanceBytes: 16 * 1024 * 1024 });
    try {
      const refused = await sendLargeUpload(`${t.url}${base(companyB.id)}/files`, { bytes: 200 * 1024, contentLength: false });
      expect({ error: refused.error, status: refused.status }).toEqual({ error: null, status: 413 });
      expect(refused.body.error).toContain('102400');
      expect((await sendLargeUpload(`${t.url}${base(companyA.id)}/files`, { bytes: 200 * 1024 })).status).toBe(201);
      expect((await t.api.put(`/api/companies/${companyB.id}/upload-limit`, { maxBytes: 100 * 1024 }, { token: agentOfB })).status).toBe(403);
    } finally {
      await t.api.put(`/api/companies/${companyB.id}/upload-limit`, { maxBytes: null });
    }
    expect((await t.api.get(`/api/companies/${companyB.id}/upload-limit`)).body).toMatchObject({ maxBytes: null, effectiveBytes: 16 * 1024 * 1024 });
  });

  it('refuse an upload route declared without blobs.write, or without a company', async () => {
    for (const [change, field] of [
      [(m: any) => { m.key = 'blob-nocap'; m.capabilities = m.capabilities.filter((c: any) => c.id !== 'blobs.write'); }, 'routes.0.upload'],
      [(m: any) => { m.key = 'blob-nocompany'; m.routes[0].path = '/files'; delete m.routes[0].companyParam; }, 'routes.0.upload'],
    ] as const) {
      const res = await t.api.post('/api/plugins/install', { localPath: await pluginVariant(FIXTURE, change) });
      expect(res.status, res.text).toBe(422);
      expect(res.text).toContain(field);
    }
  });

  it("answer an agent of another company 403 JSON even while it sends a large body", async () => {
    const answer = await sendLargeUpload(`${t.url}${base(companyA.id)}/files`, { bytes: 5 * 1024 * 1024, token: agentOfB });
    expect(answer.error).toBeNull();
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ code: expect.any(String) });
  });

  it('refuse a type off the allow-list, and bytes that contradict a declared image type, with 415 JSON', async () => {
    const before = await blobCount(companyA.id);
    const offList = await sendLargeUpload(`${t.url}${base(companyA.id)}/files`, { bytes: 2 * 1024 * 1024, partType: 'application/x-msdownload' });
    expect({ error: offList.error, status: offList.status, code: offList.body.code }).toEqual({ error: null, status: 415, code: 'unsupported_media_type' });
    const mislabelled = await upload(companyA.id, '<html><script>alert(1)</script></html>', 'image/png', 'x.png');
    expect({ status: mislabelled.status, code: mislabelled.body.code }).toEqual({ status: 415, code: 'blob_type_mismatch' });
    const notMultipart = await t.api.post(`${base(companyA.id)}/files`, { file: 'x' });
    expect({ status: notMultipart.status, code: notMultipart.body.code }).toEqual({ status: 415, code: 'unsupported_media_type' });
    expect(await blobCount(companyA.id)).toBe(before);
  });

  it('end a slow upload at the request deadline with 408 JSON and store nothing', async () => {
    const before = await blobCount(companyA.id);
    const answer = await sendLargeUpload(`${slowPeer.url}${base(companyA.id)}/files`, { bytes: 64 * 1024, pieceBytes: 1024, pauseMs: 100 });
    expect({ error: answer.error, status: answer.status, code: answer.body.code }).toEqual({ error: null, status: 408, code: 'upload_timeout' });
    expect(await blobCount(companyA.id)).toBe(before);
  });
});
