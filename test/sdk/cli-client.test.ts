import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { REPO, runCli } from './cli-support.ts';

/**
 * The operator and agent commands of `keel`, run as the real binary against a running kernel
 * with the first-party plugins: --json shapes, tables, contexts and profiles, errors on stderr
 * with exit code 1, payloads checked before sending, secrets from stdin, local-cli.
 */
let t: TestKernel;
let home: string;
let company: any;
let agent: any;

/** Every run gets its own HOME and data directory, so nothing of the machine's is read or written. */
const keel = (args: string[], options: { input?: string; env?: Record<string, string> } = {}) =>
  runCli([...args, '--data-dir', join(home, 'keel')], { input: options.input, env: { HOME: home, ...options.env } });
const api = (args: string[], options: { input?: string; env?: Record<string, string> } = {}) => keel([...args, '--api-base', t.url], options);
const json = (result: { code: number | null; stdout: string; stderr: string }) => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

/** A port nothing listens on: taken from the system, then given back. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  home = await mkdtemp(join(tmpdir(), 'keel-cli-home-'));
  company = await createCompany(t.api, { name: 'Cli Works' });
  agent = await createAgent(t.api, company.id, { name: 'Coder' });
});
afterAll(async () => {
  await t?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

describe('contexts and profiles', { timeout: 120_000 }, () => {
  it('starts with an empty default profile and resolves the server from the flags', async () => {
    const shown = json(await api(['context', 'show', '--json']));
    expect(shown).toEqual({
      contextFile: join(home, 'keel', 'context.json'), currentProfile: 'default', profileName: 'default', profile: {},
      resolved: { apiBase: t.url, apiBaseSource: 'address from --api-base', companyId: null, apiKeySource: null },
    });
  });

  it('sets a profile, uses it, and commands then need neither --api-base nor -C', async () => {
    const set = json(await keel(['context', 'set', '--profile', 'work', '--api-base', `${t.url}/`, '-C', company.id, '--persona', 'board', '--use', '--json']));
    expect(set).toEqual({ contextFile: join(home, 'keel', 'context.json'), currentProfile: 'work', profileName: 'work', profile: { apiBase: t.url, companyId: company.id, persona: 'board' } });
    const file = JSON.parse(await readFile(join(home, 'keel', 'context.json'), 'utf8'));
    expect(file).toEqual({ version: 1, currentProfile: 'work', profiles: { default: {}, work: { apiBase: t.url, companyId: company.id, persona: 'board' } } });

    const agents = json(await keel(['agent', 'list', '--json']));
    expect(agents.map((a: any) => a.id)).toEqual([agent.id]);
    const listed = json(await keel(['context', 'list', '--json']));
    expect(listed.profiles).toEqual([{ name: 'default', current: false }, { name: 'work', current: true, apiBase: t.url, companyId: company.id, persona: 'board' }]);
    const table = await keel(['context', 'list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^\s+PROFILE\s+API_BASE\s+COMPANY_ID\s+PERSONA\s+AGENT_ID\s+API_KEY_ENV_VAR$/);
    expect(table.stdout).toMatch(/\*\s+work\s+http/);
  });

  it('takes the key from the variable the profile names, and -C over the profile', async () => {
    const other = await createCompany(t.api, { name: 'Other Co' });
    const token = await createAgentKey(t.api, agent.id);
    json(await keel(['context', 'set', '--profile', 'coder', '--api-base', t.url, '-C', company.id, '--persona', 'agent', '--agent-id', agent.id, '--api-key-env-var-name', 'CODER_KEY', '--json']));
    const me = json(await keel(['agent', 'me', '--profile', 'coder', '--json'], { env: { CODER_KEY: token } }));
    expect(me).toMatchObject({ id: agent.id, companyId: company.id, name: 'Coder' });
    const shown = json(await keel(['context', 'show', '--profile', 'coder', '-C', other.id, '--json'], { env: { CODER_KEY: token } }));
    expect(shown.resolved).toEqual({ apiBase: t.url, apiBaseSource: 'address from profile coder', companyId: other.id, apiKeySource: 'env CODER_KEY (profile coder)' });
    expect(JSON.stringify(shown)).not.toContain(token);
  });

  it('refuses unknown profiles and bad values, naming them', async () => {
    const missing = await keel(['agent', 'list', '--profile', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('No profile nope in');
    expect(missing.stderr).toContain('(profile_not_found)');
    const persona = await keel(['context', 'set', '--persona', 'robot']);
    expect(persona.code).toBe(1);
    expect(persona.stderr).toContain("argument 'robot' is invalid");
    const base = await keel(['context', 'set', '--api-base', 'ftp://x', '--json']);
    expect(base.code).toBe(1);
    expect(JSON.parse(base.stderr)).toEqual({ error: 'profile work: apiBase must be an http(s) URL, got "ftp://x"', code: 'invalid_context' });
    const use = await keel(['context', 'use', 'ghost']);
    expect(use.code).toBe(1);
    expect(use.stderr).toContain('No profile ghost');
  });

  it('switches back with context use', async () => {
    expect(json(await keel(['context', 'use', 'default', '--json'])).currentProfile).toBe('default');
    const noCompany = await api(['agent', 'list']);
    expect(noCompany.code).toBe(1);
    expect(noCompany.stderr).toBe('Error: This command needs a company: pass -C/--company-id <id>, set KEEL_COMPANY_ID, or store one in the profile with keel context set --company-id <id> (company_required)\n');
    expect(json(await api(['agent', 'list', '--json'], { env: { KEEL_COMPANY_ID: company.id } })).length).toBe(1);
  });
});

describe('agent commands', { timeout: 120_000 }, () => {
  it('lists as a table and gets by shortname', async () => {
    const table = await api(['agent', 'list', '-C', company.id]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+URL_KEY\s+ROLE\s+STATUS\s+ADAPTER_TYPE$/);
    expect(lines[1]).toMatch(new RegExp(`^${agent.id}\\s+Coder\\s+coder\\s+engineer\\s+idle`));
    const got = json(await api(['agent', 'get', 'coder', '-C', company.id, '--json']));
    expect(got).toMatchObject({ id: agent.id, urlKey: 'coder', chainOfCommand: expect.any(Array) });
    const human = await api(['agent', 'get', agent.id]);
    expect(human.stdout).toMatch(/^id: +[0-9a-f-]{36}$/m);
    const noCompany = await api(['agent', 'get', 'coder']);
    expect(noCompany.code).toBe(1);
    expect(noCompany.stderr).toContain('"coder" is not an agent id; a shortname needs a company');
  });

  it('checks --payload-json against the server\'s schema before sending anything', async () => {
    const before = (await t.sql.query('select count(*)::int as n from agents')).rows[0].n;
    const invalid = await api(['agent', 'create', '-C', company.id, '--payload-json', '{"role":"engineer","name":7}', '--json']);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(JSON.parse(invalid.stderr)).toEqual({
      error: 'Invalid payload (checked against POST /api/companies/{companyId}/agents before sending; nothing was sent): name must be string',
      code: 'payload_invalid', issues: [{ path: 'name', message: 'must be string' }],
    });
    const missing = await api(['agent', 'hire', '-C', company.id, '--payload-json', '{}']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('name is required');
    expect(missing.stderr).toContain('  - name: is required');
    const notJson = await api(['agent', 'create', '-C', company.id, '--payload-json', '{name']);
    expect(notJson.stderr).toMatch(/^Error: --payload-json is not JSON: .* \(payload_invalid\)\n$/);
    const badPatch = await api(['agent', 'update', agent.id, '--payload-json', '{"budgetMonthlyCents":"lots"}']);
    expect(badPatch.code).toBe(1);
    expect(badPatch.stderr).toContain('PATCH /api/agents/{agentId}');
    expect((await t.sql.query('select count(*)::int as n from agents')).rows[0].n).toBe(before);
    const noRequests = await t.sql.query("select count(*)::int as n from activity_log where action = 'agent.created' and company_id = $1", [company.id]);
    expect(noRequests.rows[0].n).toBe(1);
  });

  it('creates, hires (waiting for approval), updates and approves', async () => {
    const created = json(await api(['agent', 'create', '-C', company.id, '--payload-json', '{"name":"Writer","role":"general"}', '--json']));
    expect(created).toMatchObject({ name: 'Writer', status: 'idle', companyId: company.id });
    const file = join(home, 'hire.json');
    await writeFile(file, JSON.stringify({ name: 'Reviewer', role: 'qa' }));
    await t.api.patch(`/api/companies/${company.id}`, { requireBoardApprovalForNewAgents: true });
    const hired = await api(['agent', 'hire', '-C', company.id, '--payload-json', `@${file}`]);
    expect(hired.code, hired.stderr).toBe(0);
    expect(hired.stdout).toMatch(/^Hired agent Reviewer \([0-9a-f-]{36}\), status pending_approval\nWaiting for board approval ([0-9a-f-]{36}): keel approval approve \1\n$/);
    const approvalId = /keel approval approve (\S+)/.exec(hired.stdout)![1]!;
    const approvals = json(await api(['approval', 'list', '-C', company.id, '--status', 'pending', '--json']));
    expect(approvals.map((a: any) => a.id)).toEqual([approvalId]);
    const decided = json(await api(['approval', 'approve', approvalId, '--note', 'welcome', '--json']));
    expect(decided).toMatchObject({ id: approvalId, status: 'approved', decisionNote: 'welcome' });
    await t.api.patch(`/api/companies/${company.id}`, { requireBoardApprovalForNewAgents: false });
    const updated = json(await api(['agent', 'update', 'writer', '-C', company.id, '--payload-json', '{"title":"Staff writer"}', '--json']));
    expect(updated).toMatchObject({ id: created.id, title: 'Staff writer' });
    const paused = await api(['agent', 'pause', created.id, '--reason', 'holiday']);
    expect(paused.stdout).toBe(`Writer (${created.id}) is now paused\n`);
    expect(json(await api(['agent', 'resume', created.id, '--json'])).status).toBe('idle');
    const revisions = json(await api(['agent', 'config-revisions', created.id, '--json']));
    expect(Array.isArray(revisions)).toBe(true);
    const configuration = json(await api(['agent', 'configuration', created.id, '--json']));
    expect(configuration).toBeTypeOf('object');
  });

  it('keeps the agent\'s instructions through the instruction routes: managed files, or an external path', async () => {
    const writer = await createAgent(t.api, company.id, { name: 'Instructed', adapterType: 'process', adapterConfig: { command: 'node' } });
    const put = await api(['agent', 'instructions-file:put', writer.id, '--path', 'AGENTS.md', '--content', '# Be brief']);
    expect(put).toMatchObject({ code: 0, stdout: `Wrote AGENTS.md (10 bytes) to the instructions of ${writer.id}\n` });
    expect(await api(['agent', 'instructions-file:get', writer.id, '--path', 'AGENTS.md'])).toMatchObject({ code: 0, stdout: '# Be brief\n' });
    const managed = json(await api(['agent', 'instructions-bundle', writer.id, '--json']));
    expect(managed).toMatchObject({ agentId: writer.id, mode: 'managed', entryFile: 'AGENTS.md', files: [expect.objectContaining({ path: 'AGENTS.md', size: 10 })] });
    const both = await api(['agent', 'instructions-file:put', writer.id, '--path', 'AGENTS.md']);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('exactly one of --content');

    // A process adapter names the key that holds an external path; a relative path needs a cwd: the server says so.
    const noKey = await api(['agent', 'instructions-path:update', writer.id, '--path', '/srv/agents/AGENTS.md']);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain('adapter_config_key_required');
    const relative = await api(['agent', 'instructions-path:update', writer.id, '--path', 'AGENTS.md', '--adapter-config-key', 'instructionsFilePath']);
    expect(relative.code).toBe(1);
    expect(relative.stderr).toContain('cwd_required');
    const set = await api(['agent', 'instructions-path:update', writer.id, '--path', '/srv/agents/AGENTS.md', '--adapter-config-key', 'instructionsFilePath']);
    expect(set).toMatchObject({ code: 0, stdout: `Instructions of ${writer.id}: external, adapterConfig.instructionsFilePath = /srv/agents/AGENTS.md\n` });
    const back = json(await api(['agent', 'instructions-bundle:update', writer.id, '--mode', 'managed', '--json']));
    expect(back).toMatchObject({ mode: 'managed', path: null });
    expect(await api(['agent', 'instructions-file:delete', writer.id, '--path', 'AGENTS.md'])).toMatchObject({ code: 0 });
    // The command and the other keys were never touched.
    expect((await t.api.get(`/api/agents/${writer.id}/configuration`)).body.adapterConfig.command).toBe('node');
  });

  it('refuses to delete without --yes, and deletes with it', async () => {
    const doomed = await createAgent(t.api, company.id, { name: 'Doomed' });
    const refused = await api(['agent', 'delete', doomed.id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`Error: Deleting an agent removes it and its history for good; run again with --yes to delete ${doomed.id} (confirmation_required)\n`);
    expect((await t.api.get(`/api/agents/${doomed.id}`)).status).toBe(200);
    const deleted = json(await api(['agent', 'delete', doomed.id, '--yes', '--json']));
    expect(deleted).toEqual({ ok: true, id: doomed.id });
    expect((await t.api.get(`/api/agents/${doomed.id}`)).status).toBe(404);
  });

  it('answers an agent key with the agent itself and its inbox', async () => {
    const token = await createAgentKey(t.api, agent.id);
    const me = json(await api(['agent', 'me', '--api-key', token, '--json']));
    expect(me).toMatchObject({ id: agent.id, access: expect.any(Object) });
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Fix the build', assigneeAgentId: agent.id, priority: 'high' })).body;
    const inbox = json(await api(['agent', 'inbox', '--json'], { env: { KEEL_API_KEY: token } }));
    expect(inbox.map((i: any) => i.id)).toEqual([issue.id]);
    const table = await api(['agent', 'inbox'], { env: { KEEL_API_KEY: token } });
    expect(table.stdout).toMatch(/^IDENTIFIER\s+PRIORITY\s+STATUS\s+TITLE\s+UPDATED_AT\n\S+-\d+\s+high\s+todo\s+Fix the build/);
    const board = await api(['agent', 'me', '--json']);
    expect(board.code).toBe(1);
    expect(JSON.parse(board.stderr)).toMatchObject({ status: 403, code: expect.any(String) });
  });

  it('reports server errors on stderr with exit code 1, as text or as JSON', async () => {
    const ghost = '00000000-0000-4000-8000-000000000000';
    const text = await api(['agent', 'get', ghost]);
    expect(text).toEqual({ code: 1, stdout: '', stderr: 'Error: Agent not found (not_found, HTTP 404)\n' });
    const asJson = await api(['agent', 'get', ghost, '--json']);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stderr)).toEqual({ error: 'Agent not found', code: 'not_found', status: 404 });
    const port = await closedPort();
    const down = await keel(['company', 'list', '--api-base', `http://127.0.0.1:${port}`]);
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`Error: No Keel server at http://127.0.0.1:${port} (ECONNREFUSED; address from --api-base); is it running?\n`);
  });
});

describe('agent local-cli', { timeout: 120_000 }, () => {
  const skillsDir = () => join(home, '.claude', 'skills');
  const bundled = ['doc-maintenance', 'github-pr-workflow', 'issue-triage', 'qa-acceptance', 'service', 'task-planning', 'wireframe'];

  it('mints a key, links the bundled skills and prints the four export lines', async () => {
    await mkdir(join(home, '.codex', 'skills', 'wireframe'), { recursive: true }); // the user's own folder: left alone
    const result = await api(['agent', 'local-cli', 'coder', '-C', company.id]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.map((l) => l.split('=')[0])).toEqual(['export SERVICE_API_URL', 'export SERVICE_COMPANY_ID', 'export SERVICE_AGENT_ID', 'export SERVICE_API_KEY']);
    const exports = Object.fromEntries(lines.map((l) => { const [name, value] = l.slice('export '.length).split('='); return [name, value!.slice(1, -1)]; }));
    expect(exports).toMatchObject({ SERVICE_API_URL: t.url, SERVICE_COMPANY_ID: company.id, SERVICE_AGENT_ID: agent.id });
    expect(exports.SERVICE_API_KEY).toMatch(/^\S{20,}$/);
    // The token is on stdout once and nowhere else.
    expect(result.stdout.split(exports.SERVICE_API_KEY!).length).toBe(2);
    expect(result.stderr).not.toContain(exports.SERVICE_API_KEY);
    expect(result.stderr).toContain('Minted agent key "local-cli"');
    expect(result.stderr).toContain(`Skills in ${skillsDir()}: ${bundled.length} linked, 0 already linked`);
    expect(result.stderr).toContain(`Skills in ${join(home, '.codex', 'skills')}: ${bundled.length - 1} linked, 0 already linked, 1 left alone (wireframe: ${join(home, '.codex', 'skills', 'wireframe')} exists and is not a link)`);
    for (const slug of bundled) {
      expect(lstatSync(join(skillsDir(), slug)).isSymbolicLink()).toBe(true);
      expect(readlinkSync(join(skillsDir(), slug))).toBe(join(REPO, 'plugins', 'skills', 'catalog', 'skills', slug));
    }
    expect(existsSync(join(skillsDir(), 'release-announcement'))).toBe(false); // optional skills are not linked
    const me = await t.api.get('/api/agents/me', { token: exports.SERVICE_API_KEY });
    expect(me.body.id).toBe(agent.id);
    const keys = (await t.api.get(`/api/agents/${agent.id}/keys`)).body;
    expect(keys[0]).toMatchObject({ name: 'local-cli', revokedAt: null });
  });

  it('links idempotently, and answers one JSON document with --json', async () => {
    const again = json(await api(['agent', 'local-cli', agent.id, '--key-name', 'laptop', '--json']));
    expect(Object.keys(again)).toEqual(['agent', 'key', 'skills', 'exports']);
    expect(again.agent).toEqual({ id: agent.id, name: 'Coder', urlKey: 'coder', companyId: company.id });
    expect(again.key).toEqual({ id: expect.any(String), name: 'laptop', keyPrefix: expect.any(String), createdAt: expect.any(String) });
    expect(again.skills.source).toBe(join(REPO, 'plugins', 'skills', 'catalog', 'skills'));
    expect(again.skills.targets[0]).toEqual({ dir: skillsDir(), linked: [], unchanged: bundled, skipped: [] });
    expect(again.skills.targets[1].unchanged).toHaveLength(bundled.length - 1);
    expect(Object.keys(again.exports)).toEqual(['SERVICE_API_URL', 'SERVICE_COMPANY_ID', 'SERVICE_AGENT_ID', 'SERVICE_API_KEY']);
    expect(JSON.stringify(again).split(again.exports.SERVICE_API_KEY).length).toBe(2);
  });

  it('skips the skills with --no-install-skills', async () => {
    const result = await api(['agent', 'local-cli', agent.id, '--no-install-skills', '--json']);
    expect(json(result).skills).toBeNull();
  });
});

describe('secrets', { timeout: 120_000 }, () => {
  it('reads the value from stdin, never prints it, and refuses a value flag', async () => {
    const value = 'hunter2-from-stdin';
    const created = await api(['secret', 'create', '-C', company.id, '--name', 'GITHUB_TOKEN', '--description', 'ci', '--json'], { input: `${value}\n` });
    const secret = json(created);
    expect(secret).toMatchObject({ name: 'GITHUB_TOKEN', description: 'ci', latestVersion: 1 });
    expect(created.stdout + created.stderr).not.toContain(value);
    const file = join(home, 'rotated.txt');
    await writeFile(file, 'second-value\n');
    const rotated = json(await api(['secret', 'rotate', secret.id, '--value-file', file, '--json']));
    expect(rotated.latestVersion).toBe(2);
    const flag = await api(['secret', 'create', '-C', company.id, '--name', 'X', '--value', 'oops']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain("unknown option '--value'");
    const empty = await api(['secret', 'create', '-C', company.id, '--name', 'EMPTY']);
    expect(empty).toMatchObject({ code: 1, stderr: 'Error: The secret value is empty (value_required)\n' });
    const listed = await api(['secret', 'list', '-C', company.id]);
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+PROVIDER\s+LATEST_VERSION\s+DESCRIPTION\s+UPDATED_AT\n/);
    expect(listed.stdout).toContain('GITHUB_TOKEN');
    const stored = await t.sql.query('select count(*)::int as n from company_secrets where company_id = $1', [company.id]).catch(() => null);
    if (stored) expect(stored.rows[0].n).toBe(1);
    const refused = await api(['secret', 'delete', secret.id]);
    expect(refused.code).toBe(1);
    expect(json(await api(['secret', 'delete', secret.id, '--yes', '--json']))).toEqual({ ok: true, id: secret.id });
  });
});

describe('operator groups', { timeout: 120_000 }, () => {
  it('companies, issues, projects, activity', async () => {
    const made = json(await api(['company', 'create', '--name', 'Made By Cli', '--budget-monthly-cents', '5000', '--json']));
    expect(made).toMatchObject({ name: 'Made By Cli', budgetMonthlyCents: 5000 });
    const companies = json(await api(['company', 'list', '--json']));
    expect(companies.map((c: any) => c.id)).toContain(made.id);
    const stats = json(await api(['company', 'stats', '--json']));
    expect(stats[company.id]).toMatchObject({ agentCount: expect.any(Number), issueCount: expect.any(Number) });

    const project = json(await api(['project', 'create', '-C', made.id, '--name', 'Launch', '--status', 'planned', '--json']));
    expect(project).toMatchObject({ name: 'Launch', status: 'planned' });
    const issue = json(await api(['issue', 'create', '-C', made.id, '--title', 'Write docs', '--project-id', project.id, '--priority', 'low', '--json']));
    expect(issue).toMatchObject({ title: 'Write docs', priority: 'low', projectId: project.id, status: 'backlog' });
    const updated = await api(['issue', 'update', issue.identifier, '--status', 'todo']);
    expect(updated.stdout).toBe(`Updated ${issue.identifier}: Write docs (todo)\n`);
    const page = json(await api(['issue', 'list', '-C', made.id, '--status', 'todo', '--json']));
    expect(page).toEqual({ issues: [expect.objectContaining({ id: issue.id })], nextCursor: null });
    json(await api(['issue', 'comment', issue.id, '--body', 'on it', '--json']));
    expect(json(await api(['issue', 'comments', issue.id, '--json'])).map((c: any) => c.body)).toEqual(['on it']);
    const invalid = await api(['issue', 'update', issue.id, '--status', 'sideways', '--json']);
    expect(invalid.code).toBe(1);
    expect(JSON.parse(invalid.stderr)).toMatchObject({ code: 'validation_failed', status: 400, issues: [expect.objectContaining({ path: 'status' })] });
    const activity = json(await api(['activity', '-C', made.id, '--entity-type', 'issue', '--json']));
    expect(activity.map((a: any) => a.action)).toEqual(expect.arrayContaining(['issue.created', 'issue.updated', 'issue.comment_added']));

    const refused = await api(['company', 'delete', made.id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--yes');
  });

  it('costs and budgets', async () => {
    const set = json(await api(['budget', 'set', '12345', '-C', company.id, '--json']));
    expect(set).toMatchObject({ scopeType: 'company', scopeId: company.id, budgetMonthlyCents: 12345 });
    const agentBudget = json(await api(['budget', 'set', '500', '--agent', 'coder', '-C', company.id, '--json']));
    expect(agentBudget).toMatchObject({ scopeType: 'agent', scopeId: agent.id });
    const summary = await api(['cost', 'summary', '-C', company.id]);
    expect(summary.stdout).toMatch(/^Spend \$0\.00 of budget \$123\.45 \(0(\.0+)?%\)\n/);
    const summaryJson = json(await api(['cost', 'summary', '-C', company.id, '--json']));
    expect(summaryJson).toMatchObject({ companyId: company.id, spendCents: 0, budgetCents: 12345 });
    expect(json(await api(['cost', 'breakdown', '--by', 'provider', '-C', company.id, '--json']))).toEqual([]);
    const posted = await t.api.post(`/api/companies/${company.id}/cost-events`, { agentId: agent.id, provider: 'alpha', model: 'alpha-large', costCents: 0, occurredAt: '2025-01-01T00:00:00Z' });
    expect(posted.status, posted.text).toBe(201);
    expect(json(await api(['cost', 'breakdown', '--by', 'source', '-C', company.id, '--json'])).map((r: any) => [r.source, r.eventCount])).toEqual([['self_reported', 1]]);
    expect(json(await api(['cost', 'breakdown', '--by', 'source-model', '-C', company.id, '--json'])).map((r: any) => [r.source, r.provider, r.model])).toEqual([['self_reported', 'alpha', 'alpha-large']]);
    expect((await api(['cost', 'breakdown', '--by', 'source-model', '-C', company.id])).stdout).toMatch(/self_reported\s+alpha\s+alpha-large/);
    const overview = json(await api(['budget', 'overview', '-C', company.id, '--json']));
    expect(overview.policies.length).toBeGreaterThanOrEqual(2);
    const bad = await api(['budget', 'set', 'lots', '-C', company.id]);
    expect(bad.code).toBe(1);
  });

  it('skills and the catalog', async () => {
    const catalog = json(await api(['skill', 'catalog', '--kind', 'bundled', '--json']));
    expect(catalog.map((s: any) => s.slug)).toContain('service');
    const installed = json(await api(['skill', 'install', 'issue-triage', '-C', company.id, '--json']));
    expect(installed).toMatchObject({ action: 'created', skill: expect.objectContaining({ slug: 'issue-triage' }) });
    const listed = await api(['skill', 'list', '-C', company.id]);
    expect(listed.stdout).toMatch(/^ID\s+KEY\s+NAME\s+SOURCE_TYPE\s+TRUST_LEVEL\s+ATTACHED_AGENT_COUNT\n/);
    expect(listed.stdout).toContain('keel/catalog/issue-triage');
  });

  it('the plugin group keeps working beside the new groups', async () => {
    const plugins = json(await api(['plugin', 'list', '--json']));
    expect(plugins.map((p: any) => p.pluginKey)).toEqual(expect.arrayContaining(['work', 'costs', 'skills']));
  });
});
