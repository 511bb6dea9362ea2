import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentToken, createCompany, GIF_1X1, insertAgent, JPEG_HEAD, logoForm, PNG_1X1, snapshot, WEBP_HEAD } from './companies-fixtures.ts';

const LIMIT = 32 * 1024;
let t: TestKernel;
let company: any;
beforeAll(async () => {
  t = await startTestKernel({ limits: { attachmentBytes: LIMIT } });
  company = await createCompany(t, { name: 'Logo Co' });
});
afterAll(async () => { await t?.stop(); });

const upload = (form: FormData | string, options: { token?: string; headers?: Record<string, string>; companyId?: string } = {}) =>
  t.api.post(`/api/companies/${options.companyId ?? company.id}/logo`, undefined, { rawBody: form, token: options.token, headers: options.headers });

async function content(assetId: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(`${t.url}/api/assets/${assetId}/content`);
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('POST /api/companies/:companyId/logo', () => {
  it('stores a PNG as a logo asset without attaching it', async () => {
    const res = await upload(logoForm(PNG_1X1, 'image/png', 'brand.png'));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      assetId: expect.any(String), companyId: company.id, kind: 'logo', contentType: 'image/png', byteSize: PNG_1X1.length,
      sha256: createHash('sha256').update(PNG_1X1).digest('hex'), originalFilename: 'brand.png',
      contentPath: `/api/assets/${res.body.assetId}/content`, createdAt: expect.any(String),
    });
    // The bytes live in the blob store (owner kernel), in chunks.
    const { rows } = await t.sql.query(`select a.company_id, a.kind, a.content_type, a.byte_size, b.owner, (select string_agg(c.data, ''::bytea order by c.seq) from blob_chunks c where c.blob_id = b.id) as data, a.created_by_user_id
      from assets a join blobs b on b.id = a.blob_id where a.id = $1`, [res.body.assetId]);
    expect(rows[0]).toEqual({ company_id: company.id, kind: 'logo', content_type: 'image/png', byte_size: PNG_1X1.length, owner: 'kernel', data: PNG_1X1, created_by_user_id: 'local-board' });
    const { rows: activity } = await t.sql.query("select details from activity_log where entity_id = $1 and action = 'asset.created'", [res.body.assetId]);
    expect(activity[0].details).toEqual({ kind: 'logo', contentType: 'image/png', byteSize: PNG_1X1.length, originalFilename: 'brand.png', sanitized: false });
    expect((await t.api.get(`/api/companies/${company.id}`)).body.logoAssetId).toBeNull();
  });

  it('accepts every allowed raster type, storing image/jpg as image/jpeg', async () => {
    for (const [data, type, stored] of [[JPEG_HEAD, 'image/jpeg', 'image/jpeg'], [JPEG_HEAD, 'image/jpg', 'image/jpeg'], [GIF_1X1, 'image/gif', 'image/gif'], [WEBP_HEAD, 'image/webp', 'image/webp']] as const) {
      const res = await upload(logoForm(data, type));
      expect({ type, status: res.status, contentType: res.body.contentType }).toEqual({ type, status: 201, contentType: stored });
    }
  });

  it('accepts uploads from agents of the company', async () => {
    const agent = await insertAgent(t, company.id);
    const res = await upload(logoForm(PNG_1X1, 'image/png'), { token: await agentToken(t, agent, company.id) });
    expect(res.status).toBe(201);
    const { rows } = await t.sql.query('select created_by_agent_id, created_by_user_id from assets where id = $1', [res.body.assetId]);
    expect(rows[0]).toEqual({ created_by_agent_id: agent, created_by_user_id: null });
  });

  it('sanitises SVG: scripts, handlers, foreignObject and external references are stripped', async () => {
    const svg = `<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10" onload="alert(1)">
  <script>alert('x')</script>
  <defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient><circle id="dot" r="1"/></defs>
  <style>.bad { fill: url(https://evil.example/x.svg#p) }</style>
  <rect width="10" height="10" fill="url(#g)" onclick="steal()" stroke="url(http://evil.example/s)"/>
  <use href="#dot"/><use xlink:href="https://evil.example/sprite.svg#icon"/>
  <image href="https://evil.example/track.png" width="1" height="1"/>
  <a href="javascript:alert(1)"><circle r="2"/></a>
  <foreignObject><div xmlns="http://www.w3.org/1999/xhtml">html</div></foreignObject>
  <set attributeName="href" to="javascript:alert(1)"/>
</svg>`;
    const res = await upload(logoForm(svg, 'image/svg+xml', 'logo.svg'));
    expect(res.status).toBe(201);
    expect(res.body.contentType).toBe('image/svg+xml');
    const stored = (await content(res.body.assetId)).bytes.toString('utf8');
    expect(stored.startsWith('<svg')).toBe(true);
    for (const forbidden of ['<script', 'alert', 'onload', 'onclick', 'foreignObject', 'evil.example', 'javascript:', '<set', '<div']) {
      expect({ forbidden, found: stored.includes(forbidden) }).toEqual({ forbidden, found: false });
    }
    for (const kept of ['fill="url(#g)"', 'href="#dot"', '<rect', 'viewBox="0 0 10 10"', '<circle r="2"']) {
      expect({ kept, found: stored.includes(kept) }).toEqual({ kept, found: true });
    }
    expect(res.body.byteSize).toBe(Buffer.byteLength(stored));
    const { rows } = await t.sql.query("select details from activity_log where entity_id = $1", [res.body.assetId]);
    expect(rows[0].details.sanitized).toBe(true);
  });

  const refused: Array<[string, () => FormData | string, Record<string, string> | undefined, number, unknown]> = [
    ['a JSON body', () => JSON.stringify({ file: 'x' }), { 'content-type': 'application/json' }, 415,
      { error: 'Content-Type must be multipart/form-data', code: 'unsupported_media_type' }],
    ['multipart without a boundary', () => '--x--', { 'content-type': 'multipart/form-data' }, 400,
      { error: expect.stringMatching(/^Malformed multipart body/), code: 'bad_request' }],
    ['a form without the file part', () => { const f = new FormData(); f.append('name', 'logo'); return f; }, undefined, 400,
      { error: "Missing file field 'file'", code: 'bad_request' }],
    ['a file under another field name', () => logoForm(PNG_1X1, 'image/png', 'logo.png', 'image'), undefined, 400,
      { error: "Missing file field 'file'", code: 'bad_request' }],
    ['a disallowed type', () => logoForm('<html></html>', 'text/html', 'x.html'), undefined, 415,
      { error: 'Unsupported image type: text/html; allowed types are image/png, image/jpeg, image/jpg, image/webp, image/gif, image/svg+xml', code: 'unsupported_media_type' }],
    ['an unlabelled file', () => logoForm(PNG_1X1, 'application/octet-stream'), undefined, 415,
      expect.objectContaining({ error: expect.stringMatching(/^Unsupported image type: application\/octet-stream;/) })],
    ['HTML labelled as PNG', () => logoForm('<script>alert(1)</script>', 'image/png'), undefined, 422,
      { error: 'File content does not match its declared type image/png', code: 'image_type_mismatch' }],
    ['a PNG labelled as GIF', () => logoForm(PNG_1X1, 'image/gif'), undefined, 422,
      { error: 'File content does not match its declared type image/gif', code: 'image_type_mismatch' }],
    ['a PNG labelled as SVG', () => logoForm(PNG_1X1, 'image/svg+xml'), undefined, 422,
      { error: 'SVG must be UTF-8 text', code: 'invalid_svg' }],
    ['an empty file', () => logoForm(Buffer.alloc(0), 'image/png'), undefined, 422,
      { error: 'Image is empty', code: 'empty_image' }],
    ['a blank SVG', () => logoForm('   \n', 'image/svg+xml'), undefined, 422,
      { error: 'SVG is empty', code: 'invalid_svg' }],
    ['an SVG with no drawing', () => logoForm('<svg xmlns="http://www.w3.org/2000/svg"><title>t</title></svg>', 'image/svg+xml'), undefined, 422,
      { error: 'SVG is empty after sanitizing (nothing safe to draw remains)', code: 'invalid_svg' }],
    ['an SVG that is only a script', () => logoForm('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><foreignObject><p>x</p></foreignObject></svg>', 'image/svg+xml'), undefined, 422,
      { error: 'SVG is empty after sanitizing (nothing safe to draw remains)', code: 'invalid_svg' }],
    ['text labelled as SVG', () => logoForm('hello world', 'image/svg+xml'), undefined, 422,
      { error: 'File is not an SVG document', code: 'invalid_svg' }],
    ['a file over the size limit', () => logoForm(Buffer.concat([PNG_1X1, Buffer.alloc(LIMIT)]), 'image/png'), undefined, 413,
      { error: `File exceeds the upload limit of ${LIMIT} bytes`, code: 'payload_too_large' }],
  ];
  for (const [label, body, headers, status, expected] of refused) {
    it(`refuses ${label} and stores nothing`, async () => {
      const before = await snapshot(t);
      const res = await upload(body(), { headers });
      expect(res.status).toBe(status);
      expect(res.body).toEqual(expected);
      expect(await snapshot(t)).toEqual(before);
    });
  }

  it('refuses a request declaring a body far beyond the limit before reading it', async () => {
    const before = await snapshot(t);
    const res = await upload(logoForm(Buffer.concat([PNG_1X1, Buffer.alloc(LIMIT * 4)]), 'image/png'));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    expect(await snapshot(t)).toEqual(before);
  });

  it('answers 400 to multipart bodies that end early, from a paused agent too, and keeps serving', async () => {
    const agent = await insertAgent(t, company.id, { status: 'paused', pauseReason: 'manual' });
    const token = await agentToken(t, agent, company.id);
    const head = (name: string, filename = 'a.png') => `--b\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: image/png\r\n\r\n`;
    const truncated = [
      ['inside the file part', `${head('file')}abc`],
      ['inside a part that is not the file', `${head('other')}abc`],
      ['after the file part, with no closing boundary', `${head('file')}abc\r\n--b\r\n`],
      ['inside part headers', '--b\r\nContent-Disposition: form-da'],
      ['right after the first boundary', '--b'],
    ];
    // An 'error' event nobody listens to would end a real server; here it reaches the process as an uncaught exception.
    const escaped: unknown[] = [];
    const listener = (error: unknown) => { escaped.push(error); };
    process.on('uncaughtException', listener);
    try {
      for (const [label, body] of truncated) {
        const before = await snapshot(t);
        const res = await upload(body!, { token, headers: { 'content-type': 'multipart/form-data; boundary=b' } });
        expect({ label, status: res.status, code: res.body.code }).toEqual({ label, status: 400, code: 'bad_request' });
        expect(await snapshot(t)).toEqual(before);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('uncaughtException', listener);
    }
    expect(escaped).toEqual([]);
    expect((await t.api.get('/api/health')).status).toBe(200);
  });

  it('keeps serving when a client disconnects in the middle of an upload', async () => {
    const escaped: unknown[] = [];
    const listener = (error: unknown) => { escaped.push(error); };
    process.on('uncaughtException', listener);
    try {
      const { port } = new URL(t.url);
      for (const type of ['multipart/form-data; boundary=b', 'application/json']) {
        const socket = connect(Number(port), '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(`POST /api/companies/${company.id}/${type.startsWith('multipart') ? 'logo' : 'agents'} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 100000\r\n\r\n`);
        socket.write(type.startsWith('multipart') ? '--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nabc' : '{"name": "x');
        await new Promise((resolve) => setTimeout(resolve, 50));
        socket.destroy();
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      process.off('uncaughtException', listener);
    }
    expect(escaped).toEqual([]);
    expect((await t.api.get('/api/health')).status).toBe(200);
  });

  it('answers 404 for an unknown company', async () => {
    const res = await upload(logoForm(PNG_1X1, 'image/png'), { companyId: '00000000-0000-4000-8000-000000000000' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('Company not found');
  });
});

describe('GET /api/assets/:assetId/content', () => {
  it('serves the stored bytes with their type, nosniff and a validator', async () => {
    const res = await upload(logoForm(GIF_1X1, 'image/gif'));
    const got = await content(res.body.assetId);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(GIF_1X1)).toBe(true);
    expect(got.headers.get('content-type')).toBe('image/gif');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-security-policy')).toBeNull();
    const etag = got.headers.get('etag')!;
    expect(etag).toBe(`"${res.body.sha256}"`);
    const cached = await fetch(`${t.url}/api/assets/${res.body.assetId}/content`, { headers: { 'if-none-match': etag } });
    expect(cached.status).toBe(304);
  });

  it('serves SVG under a sandboxing Content-Security-Policy', async () => {
    const res = await upload(logoForm('<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>', 'image/svg+xml'));
    const got = await content(res.body.assetId);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/svg+xml');
    expect(got.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox");
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.bytes.toString()).toBe('<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>');
  });

  it('serves the logo to agents of the company', async () => {
    const res = await upload(logoForm(PNG_1X1, 'image/png'));
    const token = await agentToken(t, await insertAgent(t, company.id), company.id);
    const got = await t.api.get(`/api/assets/${res.body.assetId}/content`, { token });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/png');
  });

  it('answers 404 for unknown and malformed asset ids', async () => {
    const unknown = await t.api.get('/api/assets/00000000-0000-4000-8000-000000000000/content');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'Asset not found', code: 'not_found' });
    const malformed = await t.api.get('/api/assets/nope/content');
    expect(malformed.status).toBe(404);
    expect(malformed.body.error).toBe('Asset not found');
  });
});
