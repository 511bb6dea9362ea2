import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { eventsSettled } from '../../support/events.ts';

let t: TestKernel;
let company: any;
let other: any;
let release: any;
let notes: any;
const REQUIRED_KEY = 'keel/catalog/service';
const IMPORTED_NOTES = 'acme/tools/notes';

/**
 * Skills that no route of this plugin creates on its own yet (the catalog installs bundled
 * ones; an import needs a repository) are inserted the way the plugin stores them: a required
 * bundled skill, and an imported skill whose slug `notes` a managed skill shares.
 */
async function insertSkill(companyId: string, key: string, slug: string, required = false): Promise<string> {
  const { rows } = await t.sql.query(
    `insert into plugin_skills.company_skills (company_id, key, slug, name, markdown, source_type, trust_level, required)
     values ($1, $2, $3, $3, '# x', 'catalog', 'markdown_only', $4) returning id`, [companyId, key, slug, required]);
  return rows[0].id;
}

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Agent Skills Co' });
  other = await createCompany(t.api, { name: 'Elsewhere' });
  release = (await t.api.post(`/api/companies/${company.id}/skills`, { name: 'Release Notes' })).body;
  notes = (await t.api.post(`/api/companies/${company.id}/skills`, { name: 'Notes' })).body;
  await insertSkill(company.id, IMPORTED_NOTES, 'notes');
  await insertSkill(company.id, REQUIRED_KEY, 'service', true);
}, 120_000);
afterAll(async () => { await t?.stop(); });

const count = async (sql: string, params: unknown[]) => Number((await t.sql.query(sql, params)).rows[0].n);
const agentCount = () => count('select count(*)::int as n from agents where company_id = $1', [company.id]);
const preference = async (agentId: string) => (await t.sql.query('select desired_skills from plugin_skills.agent_skill_preferences where agent_id = $1', [agentId])).rows[0]?.desired_skills;

describe('desiredSkills on create and hire', () => {
  it('resolves uuids, canonical keys and unique slugs, adds the required skills and stores them in adapterConfig and the plugin record', async () => {
    const agent = await createAgent(t.api, company.id, { desiredSkills: [release.id, `  ${notes.key.toUpperCase()}`, 'release-notes'] });
    expect(agent.desiredSkills).toEqual([release.key, notes.key, REQUIRED_KEY]);
    expect(agent.adapterConfig.serviceSkillSync).toEqual({ desiredSkills: [release.key, notes.key, REQUIRED_KEY] });
    await eventsSettled(t);
    expect(await preference(agent.id)).toEqual([release.key, notes.key, REQUIRED_KEY]);
  });

  it('refuses unknown and ambiguous references with 422 and creates nothing', async () => {
    const before = await agentCount();
    const activity = await count("select count(*)::int as n from activity_log where company_id = $1 and action = 'agent.created'", [company.id]);
    const res = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Nope', desiredSkills: ['nope', 'notes', randomUUID()] });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe(`Invalid company skill selection (nope, ${res.body.details.unknown[1]}, notes (ambiguous))`);
    expect(res.body).toMatchObject({ code: 'invalid_skill_selection', details: { ambiguous: ['notes'], plugin: 'skills', point: 'agent.desired-skills' } });
    expect(await agentCount()).toBe(before);
    expect(await count("select count(*)::int as n from activity_log where company_id = $1 and action = 'agent.created'", [company.id])).toBe(activity);
  });

  it('resolves a list written straight into adapterConfig.serviceSkillSync like desiredSkills', async () => {
    const agent = await createAgent(t.api, company.id, { adapterConfig: { serviceSkillSync: { desiredSkills: ['release-notes'] } } });
    expect(agent.desiredSkills).toEqual([release.key, REQUIRED_KEY]);
    const bad = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Raw', adapterConfig: { serviceSkillSync: { desiredSkills: ['ghost'] } } });
    expect(bad.status).toBe(422);
    expect(bad.body.error).toBe('Invalid company skill selection (ghost)');
  });

  it('hires with the resolved list in the approval, and refuses a bad selection without agent, approval or activity', async () => {
    const gated = await createCompany(t.api, { name: 'Gated', requireBoardApprovalForNewAgents: true });
    const skill = (await t.api.post(`/api/companies/${gated.id}/skills`, { name: 'Triage' })).body;
    const hire = await t.api.post(`/api/companies/${gated.id}/agent-hires`, { name: 'Hired', desiredSkills: ['triage'] });
    expect(hire.status, hire.text).toBe(201);
    // The catalog's required skill is added even in a company that has never listed (installed) it.
    expect(hire.body.agent.desiredSkills).toEqual([skill.key, REQUIRED_KEY]);
    expect(hire.body.approval.payload.adapterConfig.serviceSkillSync).toEqual({ desiredSkills: [skill.key, REQUIRED_KEY] });
    const approvals = await count('select count(*)::int as n from approvals where company_id = $1', [gated.id]);
    const agents = await count('select count(*)::int as n from agents where company_id = $1', [gated.id]);
    const activity = await count('select count(*)::int as n from activity_log where company_id = $1', [gated.id]);
    const refused = await t.api.post(`/api/companies/${gated.id}/agent-hires`, { name: 'Refused', desiredSkills: ['triage', 'release-notes'] });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe('Invalid company skill selection (release-notes)');
    expect(await count('select count(*)::int as n from approvals where company_id = $1', [gated.id])).toBe(approvals);
    expect(await count('select count(*)::int as n from agents where company_id = $1', [gated.id])).toBe(agents);
    expect(await count('select count(*)::int as n from activity_log where company_id = $1', [gated.id])).toBe(activity);
  });

  it('resolves desiredSkills of a PATCH, and refuses a bad one leaving the agent as it was', async () => {
    const agent = await createAgent(t.api, company.id, {});
    const patched = await t.api.patch(`/api/agents/${agent.id}`, { desiredSkills: ['release-notes'] });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.desiredSkills).toEqual([release.key, REQUIRED_KEY]);
    const refused = await t.api.patch(`/api/agents/${agent.id}`, { desiredSkills: ['notes'], title: 'Changed' });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe('Invalid company skill selection (notes (ambiguous))');
    expect((await t.api.get(`/api/agents/${agent.id}`)).body).toMatchObject({ title: null, desiredSkills: [release.key, REQUIRED_KEY] });
  });
});

describe('the desired list survives configuration edits', () => {
  it('keeps it across an adapter change, a replaceAdapterConfig PATCH (even one naming the slot) and a merge naming the slot', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'process', adapterConfig: { command: 'run' }, desiredSkills: ['release-notes'] });
    const expected = [release.key, REQUIRED_KEY];
    const changed = await t.api.patch(`/api/agents/${agent.id}`, { adapterType: 'alpha_local', adapterConfig: { model: 'm' } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.desiredSkills).toEqual(expected);
    const replaced = await t.api.patch(`/api/agents/${agent.id}`, { replaceAdapterConfig: true, adapterType: 'beta_local', adapterConfig: { cwd: '/w', serviceSkillSync: null } });
    expect(replaced.status, replaced.text).toBe(200);
    // The coding-agents plugin stores beta_local's configuration with its defaults filled in (command, model, ...).
    expect(replaced.body.adapterConfig).toMatchObject({ cwd: '/w', command: 'codex', serviceSkillSync: { desiredSkills: expected } });
    expect(replaced.body.adapterConfig).not.toHaveProperty('model', 'm');
    expect(replaced.body.desiredSkills).toEqual(expected);
    const merged = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { serviceSkillSync: { desiredSkills: ['smuggled'] } } });
    expect(merged.body.desiredSkills).toEqual(expected);
    await eventsSettled(t);
    const snapshot = await t.api.get(`/api/agents/${agent.id}/skills`);
    expect(snapshot.body).toMatchObject({ adapterType: 'beta_local', mode: 'persistent', desiredSkills: expected });
    expect(await preference(agent.id)).toEqual(expected);
  });
});

describe('GET /api/agents/{agentId}/skills and POST .../skills/sync', () => {
  it('answers the snapshot: modes, entries, states and origins', async () => {
    const agent = await createAgent(t.api, company.id, { adapterType: 'process', desiredSkills: [release.id] });
    const res = await t.api.get(`/api/agents/${agent.id}/skills`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ adapterType: 'process', supported: true, mode: 'persistent', desiredSkills: [release.key, REQUIRED_KEY], warnings: [] });
    const byKey = new Map(res.body.entries.map((entry: any) => [entry.key, entry]));
    expect(byKey.get(release.key)).toEqual({ key: release.key, runtimeName: 'release-notes', desired: true, managed: true, required: false, state: 'installed', origin: 'company' });
    expect(byKey.get(REQUIRED_KEY)).toMatchObject({ desired: true, required: true, state: 'installed', origin: 'service_required' });
    expect(byKey.get(notes.key)).toMatchObject({ desired: false, state: 'available' });
    // Two skills share the slug notes: their runtime names differ.
    expect((byKey.get(notes.key) as any).runtimeName).not.toBe((byKey.get(IMPORTED_NOTES) as any).runtimeName);

    const ephemeral = await createAgent(t.api, company.id, { adapterType: 'alpha_local', desiredSkills: [release.id] });
    const snap = (await t.api.get(`/api/agents/${ephemeral.id}/skills`)).body;
    expect(snap).toMatchObject({ mode: 'ephemeral', supported: true });
    expect(snap.entries.find((entry: any) => entry.key === release.key).state).toBe('configured');
  });

  it('builds the snapshot of an unsupported adapter from the stored preference', async () => {
    // eta_gateway's configuration is checked by the remote-runner plugin: a run server elsewhere (a loopback one must be opened by the operator).
    const configs: Record<string, Record<string, unknown>> = { eta_gateway: { apiBaseUrl: 'https://run-server.example/api', apiKey: 'run-server-key' } };
    for (const adapterType of ['zeta_gateway', 'eta_gateway', 'http']) {
      const agent = await createAgent(t.api, company.id, { adapterType, desiredSkills: ['release-notes'], ...(configs[adapterType] ? { adapterConfig: configs[adapterType] } : {}) });
      const res = await t.api.get(`/api/agents/${agent.id}/skills`);
      expect(res.body).toMatchObject({ adapterType, supported: false, mode: 'unsupported', desiredSkills: [release.key, REQUIRED_KEY] });
      expect(res.body.entries.find((entry: any) => entry.key === release.key)).toMatchObject({ desired: true, state: 'configured' });
      expect(res.body.warnings).toEqual([`Adapter ${adapterType} cannot receive skill files; the desired skills are recorded only`]);
    }
  });

  it('syncs to exactly the list, re-adds required skills, writes both records and an activity entry', async () => {
    const agent = await createAgent(t.api, company.id, { desiredSkills: ['release-notes'] });
    const res = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [notes.id, IMPORTED_NOTES] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.desiredSkills).toEqual([notes.key, IMPORTED_NOTES, REQUIRED_KEY]);
    expect(res.body.entries.find((entry: any) => entry.key === release.key)).toMatchObject({ desired: false, state: 'available' });
    expect(await preference(agent.id)).toEqual([notes.key, IMPORTED_NOTES, REQUIRED_KEY]);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.desiredSkills).toEqual([notes.key, IMPORTED_NOTES, REQUIRED_KEY]);
    const entry = (await t.sql.query("select details from activity_log where entity_id = $1 and action = 'agent.skills_synced'", [agent.id])).rows[0];
    expect(entry.details).toMatchObject({ desiredSkills: [notes.key, IMPORTED_NOTES, REQUIRED_KEY], added: [notes.key, IMPORTED_NOTES], removed: [release.key] });
    const empty = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [] });
    expect(empty.body.desiredSkills).toEqual([REQUIRED_KEY]);
    await eventsSettled(t);
    expect(await preference(agent.id)).toEqual([REQUIRED_KEY]);
    expect((await t.api.get(`/api/agents/${agent.id}/skills`)).body.desiredSkills).toEqual([REQUIRED_KEY]);
  });

  it('refuses an unknown or ambiguous reference (422) and a malformed body (400), changing nothing', async () => {
    const agent = await createAgent(t.api, company.id, { desiredSkills: ['release-notes'] });
    const res = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: ['notes', 'ghost'] });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ error: 'Invalid company skill selection (ghost, notes (ambiguous))', code: 'invalid_skill_selection' });
    expect((await t.api.post(`/api/agents/${agent.id}/skills/sync`, {})).status).toBe(400);
    expect((await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [''] })).status).toBe(400);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.desiredSkills).toEqual([release.key, REQUIRED_KEY]);
  });

  it('shows a desired skill that no longer exists as missing with a warning instead of dropping it', async () => {
    const doomed = (await t.api.post(`/api/companies/${company.id}/skills`, { name: 'Doomed' })).body;
    const agent = await createAgent(t.api, company.id, { desiredSkills: ['doomed'] });
    expect((await t.api.delete(`/api/companies/${company.id}/skills/${doomed.id}`)).status).toBe(200);
    const res = await t.api.get(`/api/agents/${agent.id}/skills`);
    expect(res.body.desiredSkills).toEqual([doomed.key, REQUIRED_KEY]);
    expect(res.body.entries.find((entry: any) => entry.key === doomed.key)).toEqual({
      key: doomed.key, runtimeName: 'doomed', desired: true, managed: true, required: false, state: 'missing', origin: 'company',
    });
    expect(res.body.warnings).toEqual([`Desired skill ${doomed.key} is not in the company's skills; it cannot be materialised until it is installed again`]);
  });

  it('scopes by company and permission: the agent reads its own, creators read and sync, peers and other companies do not', async () => {
    const agent = await createAgent(t.api, company.id, { desiredSkills: ['release-notes'] });
    const own = await createAgentKey(t.api, agent.id);
    expect((await t.api.as(own).get(`/api/agents/${agent.id}/skills`)).status).toBe(200);
    const ownSync = await t.api.as(own).post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [] });
    expect(ownSync.status).toBe(403);
    expect(ownSync.body.code).toBe('permission_denied');
    const peer = await createAgentKey(t.api, (await createAgent(t.api, company.id)).id);
    expect((await t.api.as(peer).get(`/api/agents/${agent.id}/skills`)).status).toBe(403);
    const ceo = await createAgentKey(t.api, (await createAgent(t.api, company.id, { role: 'ceo' })).id);
    expect((await t.api.as(ceo).get(`/api/agents/${agent.id}/skills`)).status).toBe(200);
    const synced = await t.api.as(ceo).post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: ['release-notes'] });
    expect(synced.status, synced.text).toBe(200);
    const outsider = await createAgentKey(t.api, (await createAgent(t.api, other.id)).id);
    expect((await t.api.as(outsider).get(`/api/agents/${agent.id}/skills`)).status).toBe(403);
    expect((await t.api.as(outsider).post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [] })).status).toBe(403);
    expect((await t.api.get(`/api/agents/${randomUUID()}/skills`)).status).toBe(404);
    expect((await t.api.post(`/api/agents/${randomUUID()}/skills/sync`, { desiredSkills: [] })).status).toBe(404);
    // Another company's skills are not this company's: its slug is unknown here.
    await t.api.post(`/api/companies/${other.id}/skills`, { name: 'Foreign Only' });
    const foreign = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: ['foreign-only'] });
    expect(foreign.body.error).toBe('Invalid company skill selection (foreign-only)');
  });
});

describe('with the skills plugin disabled', () => {
  it('stores desiredSkills as given, as the kernel does alone', async () => {
    expect((await t.api.post('/api/plugins/skills/disable', {})).status).toBe(200);
    try {
      const agent = await createAgent(t.api, company.id, { desiredSkills: ['anything', 'notes'] });
      expect(agent.desiredSkills).toEqual(['anything', 'notes']);
    } finally {
      expect((await t.api.post('/api/plugins/skills/enable', {})).status).toBe(200);
    }
  });
});
