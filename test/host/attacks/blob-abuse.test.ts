import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable, pluginVariant } from '../../support/plugins.ts';
import { sendLargeUpload } from '../../support/large-upload.ts';
import { createCompany } from '../../kernel/companies-fixtures.ts';

/**
 * Attacks on the blob store through the real server: filling a company's store from one call
 * (quotas per plugin and per company, in blobs and bytes, held by the database across two
 * kernels), a text too large to copy, a file name that hides its extension behind a bidi
 * override, and HTML declared as plain text (or not declared at all) asked for inline.
 */
const FIXTURE = fileURLToPath(new URL('../fixtures/blob-fx', import.meta.url));
const QUOTA = { pluginBlobs: 6, pluginBytes: 40 * 1024, companyBlobs: 10, companyBytes: 1024 * 1024 };
let t: TestKernel;
let peer: PeerKernel;

const base = (companyId: string, plugin = 'blob-fx') => `/api/plugins/${plugin}/companies/${companyId}`;
const usage = async (companyId: string) => (await t.sql.query(
  `select count(*)::int as blobs, coalesce(sum(byte_size), 0)::int as bytes from blobs where company_id = $1 and owner = 'blob-fx'`, [companyId])).rows[0] as { blobs: number; bytes: number };
const restarts = async () => (await t.api.get('/api/plugins/blob-fx/health')).body.worker.restarts as number;

/** A multipart body written by hand, so that the file part can carry no Content-Type at all. */
function rawUpload(url: string, filename: string, content: string, partType: string | null) {
  const boundary = 'keel-sniff-boundary';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)}\r\n${partType ? `Content-Type: ${partType}\r\n` : ''}\r\n`;
  return fetch(url, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: `${head}${content}\r\n--${boundary}--\r\n` });
}

beforeAll(async () => {
  t = await startTestKernel({ limits: { attachmentBytes: 16 * 1024 * 1024, blobQuota: QUOTA } });
  await installAndEnable(t, FIXTURE);
  await installAndEnable(t, await pluginVariant(FIXTURE, (manifest) => { manifest.key = 'blob-other'; manifest.displayName = 'Blob other'; }));
  peer = await startPeerKernel(t, { limits: { jsonBodyBytes: 1024 * 1024, attachmentBytes: 16 * 1024 * 1024, blobQuota: QUOTA } });
});
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
});

describe('blob quotas', () => {
  it('refuse the blob past the per-plugin count quota with 413 blob_quota_exceeded, keeping the ones before it', async () => {
    const company = await createCompany(t, { name: 'Quota count' });
    const res = await t.api.post(`${base(company.id)}/many-notes`, { count: 50, bytes: 10 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.created).toHaveLength(QUOTA.pluginBlobs);
    expect(res.body.refused).toMatchObject({ status: 413, code: 'blob_quota_exceeded', message: expect.stringContaining('limits.blobQuota.pluginBlobs') });
    expect(await usage(company.id)).toEqual({ blobs: QUOTA.pluginBlobs, bytes: QUOTA.pluginBlobs * 10 });
  });

  it('refuse the blob past the per-plugin byte quota, by uploads too (before the body is read), and give the room back on delete', async () => {
    const company = await createCompany(t, { name: 'Quota bytes' });
    const res = await t.api.post(`${base(company.id)}/many-notes`, { count: 50, bytes: 15 * 1024 });
    expect(res.body.created).toHaveLength(2);
    expect(res.body.refused).toMatchObject({ status: 413, code: 'blob_quota_exceeded', message: expect.stringContaining('limits.blobQuota.pluginBytes') });
    expect(await usage(company.id)).toEqual({ blobs: 2, bytes: 30 * 1024 });

    for (const contentLength of [true, false]) {
      const upload = await sendLargeUpload(`${t.url}${base(company.id)}/files`, { bytes: 200 * 1024, contentLength });
      expect({ contentLength, error: upload.error, status: upload.status, code: upload.body.code }).toEqual({ contentLength, error: null, status: 413, code: 'blob_quota_exceeded' });
      expect(upload.body.details).toMatchObject({ limit: 'limits.blobQuota.pluginBytes', limitValue: QUOTA.pluginBytes });
    }
    expect(await usage(company.id)).toEqual({ blobs: 2, bytes: 30 * 1024 });

    expect((await t.api.delete(`${base(company.id)}/files/${res.body.created[0]}`)).body).toEqual({ deleted: true });
    const again = await t.api.post(`${base(company.id)}/many-notes`, { count: 1, bytes: 15 * 1024 });
    expect(again.body).toMatchObject({ created: [expect.any(String)], refused: null });
  });

  it('refuse the blob past the company quota, all plugins together', async () => {
    const company = await createCompany(t, { name: 'Quota company' });
    expect((await t.api.post(`${base(company.id)}/many-notes`, { count: QUOTA.pluginBlobs, bytes: 10 })).body.refused).toBeNull();
    const other = await t.api.post(`${base(company.id, 'blob-other')}/many-notes`, { count: QUOTA.pluginBlobs, bytes: 10 });
    expect(other.body.created).toHaveLength(QUOTA.companyBlobs - QUOTA.pluginBlobs);
    expect(other.body.refused).toMatchObject({ status: 413, code: 'blob_quota_exceeded', message: expect.stringContaining('limits.blobQuota.companyBlobs') });
    const total = await t.sql.query('select count(*)::int as n from blobs where company_id = $1', [company.id]);
    expect(total.rows[0].n).toBe(QUOTA.companyBlobs);
  });

  it("forget a deleted company's usage with its blobs", async () => {
    const company = await createCompany(t, { name: 'Quota doomed' });
    expect((await t.api.post(`${base(company.id)}/many-notes`, { count: 2, bytes: 10 })).body.created).toHaveLength(2);
    expect((await t.api.delete(`/api/companies/${company.id}`)).status).toBe(200);
    expect((await t.sql.query('select count(*)::int as n from blob_usage where company_id = $1', [company.id])).rows[0].n).toBe(0);
  });

  it('let no two callers on two kernels jointly pass a quota', async () => {
    const company = await createCompany(t, { name: 'Quota race' });
    const callers = [t.url, peer.url, t.url, peer.url].map((url) => fetch(`${url}${base(company.id)}/many-notes`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: QUOTA.pluginBlobs, bytes: 100 }),
    }).then(async (res) => ({ status: res.status, body: await res.json() as { created: string[]; refused: { code: string } | null } })));
    const answers = await Promise.all(callers);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
    expect(answers.reduce((sum, answer) => sum + answer.body.created.length, 0)).toBe(QUOTA.pluginBlobs);
    // However the six were shared out, at least three callers met the quota, each with its code.
    const refusals = answers.filter((answer) => answer.body.refused).map((answer) => answer.body.refused!.code);
    expect(refusals.length).toBeGreaterThanOrEqual(3);
    expect(new Set(refusals)).toEqual(new Set(['blob_quota_exceeded']));
    expect(await usage(company.id)).toEqual({ blobs: QUOTA.pluginBlobs, bytes: QUOTA.pluginBlobs * 100 });
    const counted = await t.sql.query(`select blob_count::int as n from blob_usage where company_id = $1 and owner = 'blob-fx'`, [company.id]);
    expect(counted.rows[0].n).toBe(QUOTA.pluginBlobs);
  });

  it('refuse a 100 MiB text with 413 before copying it, and keep the plugin serving without a restart', async () => {
    const company = await createCompany(t, { name: 'Quota huge' });
    const before = await restarts();
    const res = await t.api.post(`${base(company.id)}/huge-note`, { mib: 100 });
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 413, code: 'blob_too_large' });
    expect(await usage(company.id)).toEqual({ blobs: 0, bytes: 0 });
    const small = await t.api.post(`${base(company.id)}/notes`, { text: 'still serving' });
    expect(small.status, small.text).toBe(201);
    expect(await restarts()).toBe(before);
  });
});

describe('file names', () => {
  it('strip a bidi override and other invisible characters from an uploaded name and its Content-Disposition', async () => {
    const company = await createCompany(t, { name: 'Names' });
    const name = 'invoice_\u202Efdp.exe\u200B\u2066\uFEFF\u{E0041}.txt';
    const res = await rawUpload(`${t.url}${base(company.id)}/files`, name, 'plain words', 'text/plain');
    const body = await res.json() as { id: string; filename: string };
    expect(res.status, JSON.stringify(body)).toBe(201);
    expect(body.filename).toBe('invoice_fdp.exe.txt');
    const stored = await t.sql.query('select filename from blobs where id = $1', [body.id]);
    expect(stored.rows[0].filename).toBe('invoice_fdp.exe.txt');
    const download = await fetch(`${t.url}${base(company.id)}/files/${body.id}`);
    const disposition = download.headers.get('content-disposition')!;
    expect(disposition).toBe(`attachment; filename="invoice_fdp.exe.txt"; filename*=UTF-8''invoice_fdp.exe.txt`);
    expect(disposition).not.toMatch(/%E2%80%AE|\u202E/i);
  });

  it('serve a name stored before names were cleaned without its bidi override, and encode filename* as RFC 5987', async () => {
    const company = await createCompany(t, { name: 'Old names' });
    const res = await rawUpload(`${t.url}${base(company.id)}/files`, "résumé (v1)'s.txt", 'plain words', 'text/plain');
    const { id, filename } = await res.json() as { id: string; filename: string };
    expect(filename).toBe("résumé (v1)'s.txt");
    await t.sql.query(`update blobs set filename = $2 where id = $1`, [id, "r\u202Eésumé (v1)'s.txt"]);
    const disposition = (await fetch(`${t.url}${base(company.id)}/files/${id}`)).headers.get('content-disposition')!;
    expect(disposition).toBe(`attachment; filename="r_sum_ (v1)'s.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%28v1%29%27s.txt`);
  });
});

describe('active content', () => {
  const html = '  \n<hTmL><body><script>alert(document.cookie)</script></body></html>';

  for (const partType of ['text/plain', null]) {
    it(`serve HTML uploaded ${partType ? `as ${partType}` : 'with no part type'} as an attachment even when asked inline`, async () => {
      const company = await createCompany(t, { name: `Sniff ${partType}` });
      const res = await rawUpload(`${t.url}${base(company.id)}/files`, 'page.txt', html, partType);
      const { id, contentType } = await res.json() as { id: string; contentType: string };
      expect(res.status).toBe(201);
      expect(contentType).toBe('text/plain');
      const download = await fetch(`${t.url}${base(company.id)}/files/${id}?disposition=inline`);
      expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(download.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await download.text()).toBe(html);
    });
  }

  it('serve a PDF that carries script as an attachment, and a plain PDF inline', async () => {
    const company = await createCompany(t, { name: 'Sniff PDF' });
    // The script comes after the first bytes: a PDF is searched through, not only its head.
    const filler = 'x'.repeat(15 * 1024);
    const scripted = await rawUpload(`${t.url}${base(company.id)}/files`, 'a.pdf', `%PDF-1.4\n${filler}\n1 0 obj << /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>`, 'application/pdf');
    const plain = await rawUpload(`${t.url}${base(company.id)}/files`, 'b.pdf', `%PDF-1.4\n${filler}\n1 0 obj << /Type /Catalog >>`, 'application/pdf');
    expect([scripted.status, plain.status]).toEqual([201, 201]);
    const [scriptedId, plainId] = [(await scripted.json() as { id: string }).id, (await plain.json() as { id: string }).id];
    expect((await fetch(`${t.url}${base(company.id)}/files/${scriptedId}?disposition=inline`)).headers.get('content-disposition')).toMatch(/^attachment;/);
    expect((await fetch(`${t.url}${base(company.id)}/files/${plainId}?disposition=inline`)).headers.get('content-disposition')).toMatch(/^inline;/);
  });

  it('sniff blobs stored before verdicts were kept when serving them, and still serve plain text inline', async () => {
    const company = await createCompany(t, { name: 'Sniff old rows' });
    const page = await rawUpload(`${t.url}${base(company.id)}/files`, 'old.txt', '<svg onload=alert(1)>', 'text/plain');
    const plain = await rawUpload(`${t.url}${base(company.id)}/files`, 'plain.txt', 'a < b, and that is all', 'text/plain');
    const [pageId, plainId] = [(await page.json() as { id: string }).id, (await plain.json() as { id: string }).id];
    await t.sql.query('update blobs set active_content = null where id = any($1::uuid[])', [[pageId, plainId]]);
    expect((await fetch(`${t.url}${base(company.id)}/files/${pageId}?disposition=inline`)).headers.get('content-disposition')).toMatch(/^attachment;/);
    expect((await fetch(`${t.url}${base(company.id)}/files/${plainId}?disposition=inline`)).headers.get('content-disposition')).toMatch(/^inline;/);
  });
});
