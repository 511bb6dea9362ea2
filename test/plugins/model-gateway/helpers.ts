import { expect } from 'vitest';
import type { Api, ApiResponse, TestKernel } from '../../support/harness.ts';

/** Shared builders of the model gateway tests. */

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A kernel configuration that lets providers live on this machine (the scripted ones). */
export const LOCAL_PROVIDERS = { llm: { privateNetworkHosts: ['127.0.0.1'] } };

/** A public address that needs no DNS (the tests run without a resolver); never called. */
export const PUBLIC_URL = 'https://93.184.216.34';

export const PRICE = { model: 'alpha-large', inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 };

export function providerBody(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: `Provider ${Math.random().toString(36).slice(2, 8)}`, kind: 'anthropic', baseUrl: PUBLIC_URL, apiKey: 'sk-ant-test-key-0001', models: [PRICE], ...fields };
}

export function postProvider(api: Api, companyId: string, body: unknown): Promise<ApiResponse> {
  return api.post(`/api/companies/${companyId}/model-providers`, body);
}

export async function addProvider(api: Api, companyId: string, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await postProvider(api, companyId, providerBody(fields));
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function providerRows(t: TestKernel, companyId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select * from plugin_model_gateway.providers where company_id = $1 order by name', [companyId]);
  return rows;
}

export async function activityOf(t: TestKernel, companyId: string, prefix: string): Promise<Array<{ action: string; entity_id: string; details: any }>> {
  const { rows } = await t.sql.query(
    "select action, entity_id, details from activity_log where company_id = $1 and action like $2 order by seq", [companyId, `${prefix}%`]);
  return rows;
}

/** Everything a test can read back that might hold a key: stored rows, activity, the plugin's logs. */
export async function everythingReadable(t: TestKernel, companyId: string): Promise<string> {
  const parts: unknown[] = [];
  parts.push((await t.sql.query('select * from plugin_model_gateway.providers where company_id = $1', [companyId])).rows);
  parts.push((await t.sql.query('select * from activity_log where company_id = $1', [companyId])).rows);
  parts.push((await t.api.get('/api/plugins/model-gateway/logs')).text);
  parts.push((await t.api.get(`/api/companies/${companyId}/activity`)).text);
  parts.push((await t.api.get(`/api/companies/${companyId}/model-providers`)).text);
  return JSON.stringify(parts);
}
