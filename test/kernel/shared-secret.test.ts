import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type TestKernel } from '../support/harness.ts';

/** Processes behind one load balancer must sign agent tokens alike, or tokens fail at random. */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

describe('the agent token secret shared by the processes of one database', () => {
  it('refuses to start a process whose secret differs from the one its peers use, naming the setting', async () => {
    await expect(startPeerKernel(t, { auth: { agentJwtSecret: 'another-secret-of-enough-length-0123456789' } }))
      .rejects.toThrow(/agent token secret \(auth\.agentJwtSecret, KEEL_AGENT_JWT_SECRET.*\) differs from the one the other Keel processes on this database use/);
  });

  it('starts a process with the same secret, which accepts the tokens its peer minted', async () => {
    const peer = await startPeerKernel(t);
    try {
      const company = await createCompany(t.api);
      const agent = await createAgent(t.api, company.id);
      const token = await t.kernel.services.jwt.sign({ agentId: agent.id, companyId: company.id, adapterType: 'process' });
      const me = await peer.api.get('/api/agents/me', { token });
      expect(me.status, me.text).toBe(200);
    } finally {
      await peer.stop();
    }
  });
});
