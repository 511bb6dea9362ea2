import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { eventsSettled } from '../support/events.ts';

/**
 * Company portability through HTTP: the six routes with their caller rules, the board's apply,
 * the package (no secret in it, declared inputs), preview against apply, collision strategies,
 * approvals for new agents, idempotent retries, and a round trip into a fresh instance.
 */
let t: TestKernel;
let fresh: TestKernel;
const PLANTED = 'sk-live-PLANTEDsecretVALUE0123456789';
const VAULTED = 'vaulted-secret-value-4242';
const source: { companyId: string; ceoId: string; engineerId: string; projectId: string; ceoKey: string; engineerKey: string } = {} as never;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  const company = await createCompany(t.api, { name: 'Portable Co', description: 'We make things portable.', budgetMonthlyCents: 50_000 });
  const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'github-token', value: VAULTED });
  expect(secret.status, secret.text).toBe(201);
  const ceo = await createAgent(t.api, company.id, { name: 'Chief', role: 'ceo', capabilities: 'Runs the company.' });
  const engineer = await createAgent(t.api, company.id, {
    name: 'Builder', role: 'engineer', reportsTo: ceo.id, adapterType: 'process', budgetMonthlyCents: 1234, capabilities: 'Builds things.',
    adapterConfig: { command: 'node', env: { OPENAI_API_KEY: PLANTED, GITHUB_TOKEN: { type: 'secret_ref', secretId: secret.body.id }, PLAIN: 'visible' } },
  });
  const goal = await t.api.post(`/api/companies/${company.id}/goals`, { title: 'Ship it', description: 'The goal.', level: 'company' });
  expect(goal.status, goal.text).toBe(201);
  const project = await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Launch', description: 'Launch project.', goalId: goal.body.id, leadAgentId: engineer.id });
  expect(project.status, project.text).toBe(201);
  const parent = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Parent task', description: 'Top of the tree.', projectId: project.body.id });
  expect(parent.status, parent.text).toBe(201);
  for (const [index, status] of ['todo', 'done', 'backlog'].entries()) {
    const issue = await t.api.post(`/api/companies/${company.id}/issues`, {
      title: `Task ${index + 1}`, description: `Details ${index + 1}`, status, priority: 'high', projectId: project.body.id, parentId: parent.body.id,
      ...(status === 'todo' ? { assigneeAgentId: engineer.id } : {}),
    });
    expect(issue.status, issue.text).toBe(201);
  }
  const policy = await t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'project', scopeId: project.body.id, amount: 7777 });
  expect(policy.status, policy.text).toBeLessThan(300);
  await eventsSettled(t);
  Object.assign(source, {
    companyId: company.id, ceoId: ceo.id, engineerId: engineer.id, projectId: project.body.id,
    ceoKey: await createAgentKey(t.api, ceo.id), engineerKey: await createAgentKey(t.api, engineer.id),
  });
});
afterAll(async () => { await fresh?.stop(); await t?.stop(); });

const exportOf = async (api: Api, companyId: string) => {
  const res = await api.post(`/api/companies/${companyId}/exports`, {});
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const inputsFor = (pkg: any) => Object.fromEntries(pkg.manifest.inputs.map((input: any) => [input.name, `value-of-${input.name}`]));
const agentsOf = async (api: Api, companyId: string) => (await api.get(`/api/companies/${companyId}/agents`)).body as any[];
const countRows = async (k: TestKernel) => {
  const { rows } = await k.sql.query(`select (select count(*) from companies)::int as companies, (select count(*) from agents)::int as agents,
    (select count(*) from plugin_work.issues)::int as issues, (select count(*) from plugin_work.projects)::int as projects,
    (select count(*) from secrets)::int as secrets, (select count(*) from approvals)::int as approvals`);
  return rows[0];
};

describe('export', () => {
  it('answers a package of a manifest and markdown files, with every secret replaced by a declared input', async () => {
    const pkg = await exportOf(t.api, source.companyId);
    expect(pkg).toMatchObject({ format: 'keel.company-package', version: 1 });
    const text = JSON.stringify(pkg);
    expect(text).not.toContain(PLANTED);
    expect(text).not.toContain(VAULTED);
    expect(pkg.files['COMPANY.md']).toBe('We make things portable.');
    const builder = pkg.manifest.agents.find((agent: any) => agent.name === 'Builder');
    expect(builder).toMatchObject({ adapterType: 'process', reportsTo: source.ceoId, budgetMonthlyCents: 1234 });
    expect(pkg.files[builder.instructionsPath]).toBe('Builds things.');
    expect(builder.adapterConfig.env).toEqual({
      OPENAI_API_KEY: { type: 'portability_input', input: 'builder.adapterConfig.env.OPENAI_API_KEY' },
      GITHUB_TOKEN: { type: 'portability_input', input: 'builder.adapterConfig.env.GITHUB_TOKEN' },
      PLAIN: 'visible',
    });
    expect(pkg.manifest.inputs.map((input: any) => input.name).sort()).toEqual(['builder.adapterConfig.env.GITHUB_TOKEN', 'builder.adapterConfig.env.OPENAI_API_KEY']);
    expect(pkg.manifest.parts.work.data.issues).toHaveLength(4);
    expect(pkg.manifest.parts.work.data.projects).toEqual([expect.objectContaining({ name: 'Launch', leadAgentId: source.engineerId })]);
    expect(pkg.manifest.parts.costs.data.policies).toEqual(expect.arrayContaining([expect.objectContaining({ scopeType: 'project', scopeId: source.projectId, amount: 7777 })]));
    for (const path of pkg.manifest.parts.work.files) expect(pkg.files[path]).toEqual(expect.any(String));
  });

  it('previews an export with counts, files and inputs, without contents', async () => {
    const res = await t.api.post(`/api/companies/${source.companyId}/exports/preview`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body.counts).toMatchObject({ agents: 2, 'work.issues': 4, 'work.projects': 1, 'work.goals': 1 });
    expect(res.body.files).toContain('COMPANY.md');
    expect(res.body.inputs).toHaveLength(2);
    expect(JSON.stringify(res.body)).not.toContain('Builds things.');
  });

  it('lets any agent of the company export, without adapter configuration; only the board and the CEO get the stricter routes', async () => {
    const engineer = t.api.as(source.engineerKey);
    const open = await engineer.post(`/api/companies/${source.companyId}/export`, {});
    expect(open.status, open.text).toBe(200);
    expect(open.body.manifest.redacted).toEqual(['agents.adapterConfig', 'agents.runtimeConfig']);
    expect(open.body.manifest.agents.every((agent: any) => Object.keys(agent.adapterConfig).length === 0)).toBe(true);
    expect(JSON.stringify(open.body)).not.toContain(PLANTED);
    for (const path of ['exports', 'exports/preview', 'imports/preview', 'imports/apply']) {
      const res = await engineer.post(`/api/companies/${source.companyId}/${path}`, {});
      expect(res.status, path).toBe(403);
      expect(res.body.code, path).toBe('ceo_required');
    }
    const ceo = t.api.as(source.ceoKey);
    const strict = await ceo.post(`/api/companies/${source.companyId}/exports`, {});
    expect(strict.status, strict.text).toBe(200);
    expect(strict.body.manifest.redacted).toEqual([]);
    const board = await engineer.post('/api/companies/import/preview', { package: strict.body });
    expect(board.status).toBe(403);
  });

  it("refuses another company's agent on every company route with 403", async () => {
    const other = await createCompany(t.api);
    const stranger = await createAgent(t.api, other.id, { role: 'ceo' });
    const as = t.api.as(await createAgentKey(t.api, stranger.id));
    for (const path of ['export', 'exports', 'exports/preview', 'imports/preview', 'imports/apply']) {
      const res = await as.post(`/api/companies/${source.companyId}/${path}`, {});
      expect(res.status, path).toBe(403);
      expect(res.body.code, path).toBe('company_access_denied');
    }
  });
});

describe('import', () => {
  it('previews into an existing company without writing anything', async () => {
    const pkg = await exportOf(t.api, source.companyId);
    const before = await countRows(t);
    const res = await t.api.post('/api/companies/import/preview', {
      package: pkg, target: { mode: 'existing_company', companyId: source.companyId }, collisionStrategy: 'skip',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.counts).toEqual({ create: 0, update: 0, skip: res.body.plan.length });
    expect(res.body.inputs.missing).toEqual([]);
    const rename = await t.api.post(`/api/companies/${source.companyId}/imports/preview`, { package: pkg, collisionStrategy: 'rename' });
    expect(rename.status, rename.text).toBe(200);
    expect(rename.body.plan).toContainEqual({ kind: 'agent', key: source.engineerId, name: 'Builder', action: 'create', targetName: 'Builder 2' });
    expect(rename.body.plan).toContainEqual(expect.objectContaining({ kind: 'work.project', name: 'Launch', action: 'create', targetName: 'Launch 2' }));
    expect(rename.body.inputs.missing).toEqual(['builder.adapterConfig.env.GITHUB_TOKEN', 'builder.adapterConfig.env.OPENAI_API_KEY']);
    expect(await countRows(t)).toEqual(before);
  });

  it('refuses replace on the company-scoped routes, and a missing input naming it, writing nothing', async () => {
    const pkg = await exportOf(t.api, source.companyId);
    const before = await countRows(t);
    for (const path of ['imports/preview', 'imports/apply']) {
      const res = await t.api.post(`/api/companies/${source.companyId}/${path}`, { package: pkg, collisionStrategy: 'replace' });
      expect(res.status, path).toBe(422);
      expect(res.body).toMatchObject({ code: 'replace_not_allowed', details: { field: 'collisionStrategy' } });
    }
    const target = await createCompany(t.api);
    const missing = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, inputs: { 'builder.adapterConfig.env.OPENAI_API_KEY': 'x' } });
    expect(missing.status).toBe(422);
    expect(missing.body).toMatchObject({ code: 'portability_inputs_missing', details: { missing: ['builder.adapterConfig.env.GITHUB_TOKEN'] } });
    expect(missing.body.error).toContain('builder.adapterConfig.env.GITHUB_TOKEN');
    const bad = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: { ...pkg, format: 'other' } });
    expect(bad.status).toBe(400);
    expect(await countRows(t)).toEqual({ ...before, companies: before.companies + 1 });
  });

  it('imports into an existing company with rename, storing the inputs as vault secrets', async () => {
    const pkg = await exportOf(t.api, source.companyId);
    const target = await createCompany(t.api);
    const seeded = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, inputs: inputsFor(pkg) });
    expect(seeded.status, seeded.text).toBe(201);
    const res = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, collisionStrategy: 'rename', inputs: inputsFor(pkg) });
    expect(res.status, res.text).toBe(201);
    const names = (await agentsOf(t.api, target.id)).map((agent) => agent.name).sort();
    expect(names).toEqual(['Builder', 'Builder 2', 'Chief', 'Chief 2']);
    const copy = (await agentsOf(t.api, target.id)).find((agent) => agent.name === 'Builder 2');
    const chief2 = (await agentsOf(t.api, target.id)).find((agent) => agent.name === 'Chief 2');
    expect(copy).toMatchObject({ adapterType: 'process', reportsTo: chief2.id, status: 'paused', pauseReason: 'imported' });
    const { rows } = await t.sql.query('select adapter_config from agents where id = $1', [copy.id]);
    expect(rows[0].adapter_config.env.OPENAI_API_KEY).toMatchObject({ type: 'secret_ref', version: 'latest' });
    expect(rows[0].adapter_config.env.PLAIN).toBe('visible');
    const projects = (await t.api.get(`/api/companies/${target.id}/projects`)).body.map((p: any) => p.name).sort();
    expect(projects).toEqual(['Launch', 'Launch 2']);
    expect(res.body.counts.create).toBeGreaterThan(0);
  });

  it('replaces through the board import, keeping the adapter type and configuration keys the package does not carry', async () => {
    const target = await createCompany(t.api);
    const existing = await createAgent(t.api, target.id, { name: 'Builder', role: 'general', adapterType: 'http', adapterConfig: { url: 'https://example.com', keep: 'me' } });
    const pkg = await exportOf(t.api, source.companyId);
    const res = await t.api.post('/api/companies/import', {
      package: pkg, target: { mode: 'existing_company', companyId: target.id }, collisionStrategy: 'replace', inputs: inputsFor(pkg),
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.plan).toContainEqual(expect.objectContaining({ kind: 'agent', name: 'Builder', action: 'update' }));
    const agents = await agentsOf(t.api, target.id);
    expect(agents.map((agent) => agent.name).sort()).toEqual(['Builder', 'Chief']);
    const { rows } = await t.sql.query('select adapter_type, adapter_config, role from agents where id = $1', [existing.id]);
    expect(rows[0]).toMatchObject({ adapter_type: 'process', role: 'engineer' });
    expect(rows[0].adapter_config).toMatchObject({ command: 'node', keep: 'me', url: 'https://example.com' });
    // The package changed what the existing agent runs: it waits for the board as a new one does.
    expect(agents.find((agent) => agent.id === existing.id)).toMatchObject({ status: 'paused', pauseReason: 'imported' });
  });

  it('starts an imported agent paused: its configuration runs only after the board approves it, resuming is not approving', async () => {
    const pkg = await exportOf(t.api, source.companyId);
    const res = await t.api.post('/api/companies/import', { package: pkg, target: { mode: 'new_company', name: 'Approve Me Co' }, inputs: inputsFor(pkg) });
    expect(res.status, res.text).toBe(201);
    const builder = (await agentsOf(t.api, res.body.companyId)).find((agent) => agent.name === 'Builder');
    expect(builder).toMatchObject({ status: 'paused', pauseReason: 'imported' });
    const revisions = (await t.api.get(`/api/agents/${builder.id}/config-revisions`)).body;
    expect(revisions[0]).toMatchObject({ source: 'import', createdByUserId: null, createdByAgentId: null });

    for (const attempt of [
      () => t.api.post(`/api/agents/${builder.id}/resume`, {}),
      () => t.api.patch(`/api/agents/${builder.id}`, { status: 'idle' }),
    ]) {
      const refused = await attempt();
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body).toMatchObject({ code: 'invalid_status_transition', error: expect.stringContaining('approved by the board first') });
    }
    const wake = await t.api.post(`/api/agents/${builder.id}/wakeup`, { reason: 'too early' });
    expect(wake.status, wake.text).toBe(409);
    // An agent, even the company's CEO, cannot approve.
    const chief = (await agentsOf(t.api, res.body.companyId)).find((agent) => agent.name === 'Chief');
    const chiefKey = await createAgentKey(t.api, chief.id);
    expect((await t.api.as(chiefKey).post(`/api/agents/${builder.id}/approve`, {})).status).toBe(403);
    expect((await agentsOf(t.api, res.body.companyId)).find((agent) => agent.id === builder.id).status).toBe('paused');

    const approved = await t.api.post(`/api/agents/${builder.id}/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toMatchObject({ status: 'idle', pauseReason: null });
    const after = (await t.api.get(`/api/agents/${builder.id}/config-revisions`)).body;
    expect(after[0]).toMatchObject({ source: 'approval', createdByUserId: expect.any(String), createdByAgentId: null });
    const again = await t.api.post(`/api/agents/${builder.id}/approve`, {});
    expect(again.status).toBe(409);
  });

  it('creates hire approvals for new agents when the company requires board approval', async () => {
    const target = await createCompany(t.api, { requireBoardApprovalForNewAgents: true });
    const pkg = await exportOf(t.api, source.companyId);
    const res = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, inputs: inputsFor(pkg) });
    expect(res.status, res.text).toBe(201);
    expect(res.body.approvalIds).toHaveLength(2);
    const agents = await agentsOf(t.api, target.id);
    expect(agents.map((agent) => agent.status)).toEqual(['pending_approval', 'pending_approval']);
    const approvals = (await t.api.get(`/api/companies/${target.id}/approvals`)).body;
    expect(approvals.map((a: any) => [a.type, a.status])).toEqual([['hire_agent', 'pending'], ['hire_agent', 'pending']]);
  });

  it('numbers imported issues with one consecutive range of the target company, which later issues follow', async () => {
    const pkg = await exportOf(t.api, source.companyId);
    const target = await createCompany(t.api);
    const before = await t.api.post(`/api/companies/${target.id}/issues`, { title: 'Already here' });
    expect(before.status, before.text).toBe(201);
    const res = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, inputs: inputsFor(pkg) });
    expect(res.status, res.text).toBe(201);
    const { rows } = await t.sql.query("select issue_number, identifier from plugin_work.issues where company_id = $1 and origin_kind = 'import' order by issue_number", [target.id]);
    expect(rows.length).toBe(pkg.manifest.parts.work.data.issues.length);
    const first = before.body.issueNumber ?? Number(String(before.body.identifier).split('-').pop());
    expect(rows.map((row: any) => row.issue_number)).toEqual(rows.map((_row: any, index: number) => first + 1 + index));
    expect(rows.every((row: any) => row.identifier.endsWith(`-${row.issue_number}`))).toBe(true);
    const after = await t.api.post(`/api/companies/${target.id}/issues`, { title: 'After the import' });
    expect(after.body.identifier).toBe(`${String(before.body.identifier).split('-').slice(0, -1).join('-')}-${first + rows.length + 1}`);
  });

  it('does an import once per idempotency key: a retry replays, another body with the key is 409', async () => {
    const target = await createCompany(t.api);
    const pkg = await exportOf(t.api, source.companyId);
    const body = { package: pkg, inputs: inputsFor(pkg) };
    const headers = { headers: { 'Idempotency-Key': 'import-once-1' } };
    const first = await t.api.post(`/api/companies/${target.id}/imports/apply`, body, headers);
    expect(first.status, first.text).toBe(201);
    const after = await countRows(t);
    const again = await t.api.post(`/api/companies/${target.id}/imports/apply`, body, headers);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await countRows(t)).toEqual(after);
    const other = await t.api.post(`/api/companies/${target.id}/imports/apply`, { ...body, collisionStrategy: 'skip' }, headers);
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('idempotency_key_reused');
  });
});

describe('round trip into a fresh instance', () => {
  const normalize = (pkg: any) => {
    const agentName = new Map(pkg.manifest.agents.map((agent: any) => [agent.id, agent.name]));
    const projectName = new Map(pkg.manifest.parts.work.data.projects.map((p: any) => [p.id, p.name]));
    const issueTitle = new Map(pkg.manifest.parts.work.data.issues.map((i: any) => [i.id, i.title]));
    const file = (path: string | null) => (path ? pkg.files[path] : null);
    return {
      company: { ...pkg.manifest.company, description: pkg.files[pkg.manifest.company.descriptionPath] },
      agents: pkg.manifest.agents.map((agent: any) => ({
        name: agent.name, role: agent.role, title: agent.title, adapterType: agent.adapterType, adapterConfig: agent.adapterConfig,
        budgetMonthlyCents: agent.budgetMonthlyCents, reportsTo: agentName.get(agent.reportsTo) ?? null, instructions: file(agent.instructionsPath),
      })).sort((a: any, b: any) => a.name.localeCompare(b.name)),
      inputs: pkg.manifest.inputs.map((input: any) => input.name).sort(),
      projects: pkg.manifest.parts.work.data.projects.map((p: any) => ({ name: p.name, status: p.status, lead: agentName.get(p.leadAgentId), description: file(p.descriptionPath) })),
      goals: pkg.manifest.parts.work.data.goals.map((g: any) => ({ title: g.title, level: g.level, status: g.status, description: file(g.descriptionPath) })),
      issues: pkg.manifest.parts.work.data.issues.map((i: any) => ({
        title: i.title, status: i.status, priority: i.priority, project: projectName.get(i.projectId) ?? null, parent: issueTitle.get(i.parentId) ?? null,
        assignee: agentName.get(i.assigneeAgentId) ?? null, description: file(i.descriptionPath),
      })),
      policies: pkg.manifest.parts.costs.data.policies.map((p: any) => ({
        ...p, scopeId: p.scopeType === 'company' ? 'company' : agentName.get(p.scopeId) ?? projectName.get(p.scopeId),
      })).sort((a: any, b: any) => `${a.scopeType}${a.scopeId}`.localeCompare(`${b.scopeType}${b.scopeId}`)),
    };
  };

  it('an export imported into a fresh instance exports the same agents, projects, issues and policies', async () => {
    const origin = await createCompany(t.api, { name: 'Round Trip', budgetMonthlyCents: 9000 });
    const pkg0 = await exportOf(t.api, source.companyId);
    const seeded = await t.api.post(`/api/companies/${origin.id}/imports/apply`, { package: pkg0, inputs: inputsFor(pkg0) });
    expect(seeded.status, seeded.text).toBe(201);
    await eventsSettled(t);
    const pkg = await exportOf(t.api, origin.id);
    fresh = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    const preview = await fresh.api.post('/api/companies/import/preview', { package: pkg, inputs: inputsFor(pkg) });
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.counts.update).toBe(0);
    expect(await countRows(fresh)).toMatchObject({ companies: 0, agents: 0 });
    const imported = await fresh.api.post('/api/companies/import', { package: pkg, inputs: inputsFor(pkg) });
    expect(imported.status, imported.text).toBe(201);
    await eventsSettled(fresh);
    const again = await exportOf(fresh.api, imported.body.companyId);
    expect(JSON.stringify(again)).not.toContain('value-of-');
    expect(normalize(again)).toEqual(normalize(pkg));
  });
});
