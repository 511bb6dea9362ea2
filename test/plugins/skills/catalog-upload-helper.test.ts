import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { installPath, sha256 } from './catalog-helpers.ts';

/**
 * The base skill's upload helper, run for real: the script as an agent receives it (the
 * installed skill's file, written to a working directory) is executed by Node against a
 * running kernel, with the environment a run gets.
 */
let t: TestKernel;
let company: any;
let agent: any;
let work: string;
let helper: string;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Upload Co' });
  agent = await createAgent(t.api, company.id, { name: 'Uploader' });
  // The agent's create installed the required bundled skill already: installing it again changes nothing.
  const installed = await t.api.post(installPath(company.id), { catalogSkillId: 'service' });
  expect([installed.status, installed.body.action], installed.text).toEqual([200, 'unchanged']);
  const file = await t.api.get(`/api/companies/${company.id}/skills/${installed.body.skill.id}/files?path=scripts/upload-attachment.mjs`);
  expect(file.status, file.text).toBe(200);
  work = mkdtempSync(join(tmpdir(), 'keel-upload-helper-'));
  helper = join(work, 'upload-attachment.mjs');
  writeFileSync(helper, file.body.content);
});
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await t?.stop();
});

async function openRun(): Promise<{ token: string; runId: string }> {
  const { runs, db } = t.kernel.services;
  const opened = await db.transaction((tx) => runs.open(tx, { agentId: agent.id, companyId: company.id, invocationSource: 'on_demand' }));
  return { token: opened.token, runId: opened.run.runId };
}

async function createIssue(companyId = company.id): Promise<any> {
  const res = await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Write the report' });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

function runHelper(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [helper, ...args], { cwd: work, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const runEnv = (run: { token: string; runId: string }, issueId: string, apiUrl = t.url) => ({
  SERVICE_API_URL: apiUrl, SERVICE_API_KEY: run.token, SERVICE_COMPANY_ID: company.id, SERVICE_TASK_ID: issueId, SERVICE_RUN_ID: run.runId,
});

describe('the base skill\'s upload helper', () => {
  it('uploads a file as an attachment of the task and creates an artifact work product backed by it, in the run', async () => {
    const run = await openRun();
    const issue = await createIssue();
    const report = '# Findings\n\nEverything checks out.\n';
    writeFileSync(join(work, 'report.md'), report);
    const result = await runHelper(['report.md'], runEnv(run, issue.id));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain(run.token);
    const { attachment, workProduct } = JSON.parse(result.stdout);
    expect(attachment).toMatchObject({ companyId: company.id, issueId: issue.id, filename: 'report.md', contentType: 'text/markdown', byteSize: Buffer.byteLength(report), sha256: sha256(report), createdByAgentId: agent.id, runId: run.runId });
    expect(workProduct).toMatchObject({
      issueId: issue.id, type: 'artifact', title: 'report.md', status: 'active', reviewState: 'none', isPrimary: false,
      attachmentId: attachment.id, contentPath: `/api/attachments/${attachment.id}/content`, createdByAgentId: agent.id, runId: run.runId,
      metadata: { filename: 'report.md', contentType: 'text/markdown', byteSize: Buffer.byteLength(report), sha256: sha256(report), runId: run.runId },
    });
    const listed = await t.api.get(`/api/issues/${issue.id}/work-products`);
    expect(listed.body.map((product: any) => product.id)).toEqual([workProduct.id]);
    const content = await t.api.get(`/api/attachments/${attachment.id}/content`);
    expect(content.text).toBe(report);
  });

  it('takes a title, another issue by identifier, review and primary flags, a content type, and an API address ending in /api', async () => {
    const run = await openRun();
    const issue = await createIssue();
    writeFileSync(join(work, 'data.bin'), '{"rows": 3}\n');
    const result = await runHelper(
      ['data.bin', '--title', 'Row counts', '--issue', issue.identifier, '--review', '--primary', '--content-type', 'application/json', '--status', 'ready_for_review'],
      runEnv(run, '', `${t.url}/api/`));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const { attachment, workProduct } = JSON.parse(result.stdout);
    expect(attachment).toMatchObject({ issueId: issue.id, filename: 'data.bin', contentType: 'application/json' });
    expect(workProduct).toMatchObject({ title: 'Row counts', reviewState: 'needs_board_review', isPrimary: true, status: 'ready_for_review' });
  });

  it('fails with a clear message and creates nothing: missing variables, unknown types, bad options, a bad key, another company\'s issue', async () => {
    const run = await openRun();
    const issue = await createIssue();
    writeFileSync(join(work, 'notes.md'), 'notes\n');
    writeFileSync(join(work, 'archive.xyz'), 'bytes\n');
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['notes.md'], { ...runEnv(run, issue.id), SERVICE_API_KEY: '' }, /SERVICE_API_KEY is not set/],
      [['notes.md'], { ...runEnv(run, issue.id), SERVICE_COMPANY_ID: '' }, /SERVICE_COMPANY_ID is not set/],
      [['notes.md'], { ...runEnv(run, ''), SERVICE_TASK_ID: '' }, /SERVICE_TASK_ID is not set and --issue names no issue/],
      [['notes.md'], { ...runEnv(run, issue.id), SERVICE_API_URL: 'ftp://example' }, /must be an http/],
      [['archive.xyz'], runEnv(run, issue.id), /no content type known for archive\.xyz/],
      [['missing.md'], runEnv(run, issue.id), /cannot read missing\.md: ENOENT/],
      [[], runEnv(run, issue.id), /name the file to upload/],
      [['notes.md', '--status', 'shipped'], runEnv(run, issue.id), /--status must be one of/],
      [['notes.md', '--colour'], runEnv(run, issue.id), /unknown option --colour/],
      [['notes.md'], { ...runEnv(run, issue.id), SERVICE_API_KEY: 'svc_not_a_key' }, /attachments answered 401/],
    ];
    for (const [args, env, message] of cases) {
      const result = await runHelper(args, env);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe('');
      expect(result.stderr).not.toContain(run.token);
    }
    const other = await createCompany(t.api);
    const foreign = await createIssue(other.id);
    const result = await runHelper(['notes.md', '--issue', foreign.id], runEnv(run, issue.id));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/answered 404: Issue not found/);
    expect((await t.api.get(`/api/issues/${issue.id}/attachments`)).body).toEqual([]);
    expect((await t.api.get(`/api/issues/${foreign.id}/attachments`)).body).toEqual([]);
    expect((await t.api.get(`/api/issues/${issue.id}/work-products`)).body).toEqual([]);
  });

  it('removes the uploaded attachment again when the work product is refused (a fixture server that refuses it)', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers['x-service-run-id'] ?? '-'}`);
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.method === 'POST' && req.url?.endsWith('/attachments')) { res.statusCode = 201; res.end(JSON.stringify({ id: 'att-1', byteSize: 2, sha256: 'x' })); return; }
        if (req.method === 'POST' && req.url?.endsWith('/work-products')) { res.statusCode = 422; res.end(JSON.stringify({ error: 'Attachment not found', code: 'attachment_not_found' })); return; }
        res.statusCode = 200;
        res.end(JSON.stringify({ id: 'att-1', deleted: true }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      writeFileSync(join(work, 'small.txt'), 'x\n');
      const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const result = await runHelper(['small.txt'], { SERVICE_API_URL: address, SERVICE_API_KEY: 'k', SERVICE_COMPANY_ID: 'c1', SERVICE_TASK_ID: 'i1', SERVICE_RUN_ID: 'r1' });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/work-products answered 422: Attachment not found \(attachment_not_found\) \(the uploaded attachment was removed again\)/);
      expect(seen).toEqual(['POST /api/companies/c1/issues/i1/attachments r1', 'POST /api/issues/i1/work-products r1', 'DELETE /api/attachments/att-1 r1']);
    } finally {
      server.close();
    }
  });
});
