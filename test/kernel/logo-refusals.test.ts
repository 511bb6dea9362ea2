import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { sendLargeUpload } from '../support/large-upload.ts';
import { agentToken, createCompany, insertAgent } from './companies-fixtures.ts';

/**
 * A logo upload refused before its body is read still gets its status and JSON error: the
 * kernel reads and discards the rest of the body before it answers, instead of closing the
 * connection on a client that is still sending (which reached the client as EPIPE).
 */
const LIMIT = 32 * 1024;
let t: TestKernel;
let companyA: any;
let companyB: any;
let agentOfB: string;
beforeAll(async () => {
  t = await startTestKernel({ limits: { attachmentBytes: LIMIT } });
  companyA = await createCompany(t, { name: 'Logo A' });
  companyB = await createCompany(t, { name: 'Logo B' });
  const agent = await insertAgent(t, companyB.id);
  agentOfB = await agentToken(t, agent, companyB.id);
});
afterAll(async () => { await t?.stop(); });

describe('logo upload refusals with a large body', () => {
  it('answer an agent of another company 403 JSON, not a broken connection', async () => {
    const answer = await sendLargeUpload(`${t.url}/api/companies/${companyA.id}/logo`, { bytes: 8 * 1024 * 1024, token: agentOfB, partType: 'image/png' });
    expect(answer.error).toBeNull();
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ code: expect.any(String) });
    expect((await t.sql.query('select count(*)::int as n from blobs where company_id = $1', [companyA.id])).rows[0].n).toBe(0);
  });

  it('answer 413 JSON naming the limit when Content-Length is too large, and when a chunked body grows past it', async () => {
    for (const contentLength of [true, false]) {
      const answer = await sendLargeUpload(`${t.url}/api/companies/${companyB.id}/logo`, { bytes: 4 * 1024 * 1024, token: agentOfB, partType: 'image/png', contentLength });
      expect({ contentLength, error: answer.error, status: answer.status }).toEqual({ contentLength, error: null, status: 413 });
      expect(answer.body).toMatchObject({ code: 'payload_too_large', error: expect.stringContaining(String(LIMIT)) });
    }
  });
});
