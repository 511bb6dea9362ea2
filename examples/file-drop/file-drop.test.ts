import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '@keel/sdk/testing';

const ACME = '00000000-0000-4000-8000-000000000ace';
const FILE = {
  id: '00000000-0000-4000-8000-0000000f11e0', companyId: ACME, owner: 'file-drop', contentType: 'text/plain', byteSize: 5,
  sha256: 'ab'.repeat(32), filename: 'a.txt', createdAt: '2026-01-01T00:00:00.000Z',
};
let host: TestHost;

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url), {
    kernel: {
      'blobs.createText': ([input], invocation) => ({ ...FILE, id: '00000000-0000-4000-8000-00000000cafe', companyId: invocation.companyId, filename: (input as { filename: string }).filename }),
      'blobs.get': ([id], invocation) => (id === FILE.id && invocation.companyId === ACME ? FILE : null),
    },
  });
});
afterAll(() => host?.dispose());

describe('file-drop (sdk/testing)', () => {
  it('writes a receipt for a dropped file', async () => {
    const answer = await host.callRoute('drop', { params: { companyId: ACME }, upload: FILE });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ file: FILE, receiptId: '00000000-0000-4000-8000-00000000cafe' });
    expect(host.kernel.calls.at(-1)).toMatchObject({ method: 'blobs.createText', args: [{ filename: `receipt-${FILE.id}.txt` }] });
  });

  it('answers a download with the blob to stream, and 404 for an unknown drop', async () => {
    expect((await host.callRoute('fetch', { params: { companyId: ACME, id: FILE.id } })).body).toEqual({ blob: FILE.id, disposition: 'inline' });
    expect((await host.callRoute('fetch', { params: { companyId: ACME, id: '00000000-0000-4000-8000-000000000000' } })).status).toBe(404);
  });
});
