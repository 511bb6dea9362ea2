import { expect } from 'vitest';
import type { Api } from './harness.ts';

/** Small builders over the public API, so tests set up state the way users do. */
export async function createCompany(api: Api, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await api.post('/api/companies', { name: `Company ${Math.random().toString(36).slice(2, 8)}`, ...fields });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function createAgent(api: Api, companyId: string, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await api.post(`/api/companies/${companyId}/agents`, { name: `Agent ${Math.random().toString(36).slice(2, 8)}`, role: 'engineer', ...fields });
  expect(res.status, res.text).toBe(201);
  return res.body.agent ?? res.body;
}

export async function createAgentKey(api: Api, agentId: string): Promise<string> {
  const res = await api.post(`/api/agents/${agentId}/keys`, { name: 'test' });
  expect(res.status, res.text).toBe(201);
  return res.body.token;
}
