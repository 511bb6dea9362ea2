import { expect } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { RunServer } from '../../fixtures/run-server.ts';

export const API_KEY = 'rk-live-0123456789abcdef';

/** A kernel with the first-party plugins (loopback opened to the remote runner by the operator), a company and a reference run server. */
export async function startRemoteWorld(companyName: string, overrides: Record<string, any> = {}): Promise<{ t: TestKernel; company: any; server: RunServer }> {
  const server = new RunServer(API_KEY);
  await server.start();
  const t = await startTestKernel({ plugins: { privateNetworkHosts: ['remote-runner@127.0.0.1'] }, ...overrides }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  return { t, company: await createCompany(t.api, { name: companyName }), server };
}

export async function remoteAgent(api: Api, companyId: string, server: RunServer, config: Record<string, unknown> = {}) {
  return createAgent(api, companyId, { adapterType: 'eta_gateway', adapterConfig: { apiBaseUrl: `${server.url}/`, apiKey: API_KEY, eventReconnectMs: 50, ...config } });
}

export async function logOf(t: TestKernel, runId: string): Promise<string> {
  const res = await t.api.get(`/api/heartbeat-runs/${runId}/log`);
  expect(res.status, res.text).toBe(200);
  return res.body.content as string;
}
