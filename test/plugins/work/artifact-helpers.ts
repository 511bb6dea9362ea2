import { expect } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';

/** Shared steps of the document, attachment, work product and artifact tests (all through HTTP). */

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
export const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

/**
 * A kernel with the first-party plugins, a company with one agent (and its API), and an agent of
 * another company (its API): what each work test file starts from.
 */
export async function startWorkWorld(companyName: string, agentName: string) {
  const t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  const company = await createCompany(t.api, { name: companyName });
  const agent = await createAgent(t.api, company.id, { name: agentName });
  const agentApi = t.api.as(await createAgentKey(t.api, agent.id));
  const other = await createCompany(t.api, { name: `Other ${companyName}` });
  const outsiderApi = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, other.id)).id));
  return { t, company, agent, agentApi, other, outsiderApi };
}

export async function createIssue(api: Api, companyId: string, body: Record<string, unknown>) {
  const res = await api.post(`/api/companies/${companyId}/issues`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export function fileForm(data: Buffer | string, type: string, filename: string, field = 'file'): FormData {
  const form = new FormData();
  form.append(field, new Blob([typeof data === 'string' ? data : new Uint8Array(data)], { type }), filename);
  return form;
}

export function upload(api: Api, companyId: string, issueRef: string, data: Buffer | string, type: string, filename: string) {
  return api.post(`/api/companies/${companyId}/issues/${issueRef}/attachments`, undefined, { rawBody: fileForm(data, type, filename) });
}

export async function attach(api: Api, companyId: string, issueRef: string, data: Buffer | string, type: string, filename: string) {
  const res = await upload(api, companyId, issueRef, data, type, filename);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function putDocument(api: Api, issueId: string, key: string, body: Record<string, unknown>, status = 201) {
  const res = await api.put(`/api/issues/${issueId}/documents/${key}`, body);
  expect(res.status, res.text).toBe(status);
  return res.body;
}

/** Row counts of the plugin's artifact tables and of the kernel's blobs: what a refused request must leave alone. */
export async function artifactCounts(t: TestKernel): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ['issue_documents', 'issue_document_revisions', 'issue_attachments', 'work_products']) {
    out[table] = (await t.sql.query(`select count(*)::int as n from plugin_work.${table}`)).rows[0].n;
  }
  out.blobs = (await t.sql.query("select count(*)::int as n from blobs where owner = 'work'")).rows[0].n;
  out.activity = (await t.sql.query("select count(*)::int as n from activity_log where action like 'issue.%'")).rows[0].n;
  return out;
}

/** Payloads of an event the plugin published about one entity, in order. */
export async function outbox(t: TestKernel, name: string, entityId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select payload from keel_events.outbox where name = $1 and entity_id = $2 order by seq', [name, entityId]);
  return rows.map((row: any) => row.payload);
}

/** An API client holding a live run token of the agent (what the runtime hands a running agent). */
export async function inRun(t: TestKernel, agentId: string, companyId: string): Promise<{ api: Api; runId: string }> {
  const { runs, db } = t.kernel.services;
  const opened = await db.transaction((tx) => runs.open(tx, { agentId, companyId, invocationSource: 'on_demand' }));
  return { api: t.api.as(opened.token), runId: opened.run.runId };
}
