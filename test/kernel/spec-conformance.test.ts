import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_KEY_PREFIX, BOARD_KEY_PREFIX, displayPrefix } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { addMember, boardToken, insertUser } from './agents-fixtures.ts';

/**
 * Rules of the core API specification checked across every kernel route at once, where the
 * area tests check them route by route: who may call what (401 before 403 before 404,
 * board-only, agent-only, company scoping), agents refused in terminated and
 * pending_approval, and the field names of the resources.
 */
let t: TestKernel;
let owner: string;
let outsider: string;
let company: any;
let agent: any;
let agentKey: string;
let secret: any;
let challengeId: string;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

async function ok(res: Promise<{ status: number; body: any; text: string }>): Promise<any> {
  const r = await res;
  if (r.status >= 300) throw new Error(`fixture failed: ${r.status} ${r.text}`);
  return r.body;
}

async function rowCounts(): Promise<Record<string, number>> {
  const tables = ['companies', 'agents', 'agent_api_keys', 'secrets', 'secret_versions', 'activity_log', 'resource_memberships', 'permission_grants', 'agent_secret_grants', 'assets', 'board_api_keys'];
  return (await t.sql.query(`select ${tables.map((n) => `(select count(*) from ${n})::int as ${n}`).join(', ')}`)).rows[0];
}

/** A body given as a function is built when the request is sent, once the fixtures exist. */
type Route = [method: string, path: () => string, body?: unknown];

/** Board-only routes: B in the spec's Auth column, plus the board sides of the kernel's own routes. */
const BOARD_ONLY: Route[] = [
  ['GET', () => '/api/companies'],
  ['GET', () => '/api/companies/stats'],
  ['POST', () => '/api/companies', { name: 'Nope' }],
  ['POST', () => `/api/companies/${company.id}/archive`],
  ['DELETE', () => `/api/companies/${company.id}`],
  ['POST', () => `/api/companies/${company.id}/agents`, { name: 'Nope' }],
  ['POST', () => `/api/agents/${agent.id}/approve`],
  ['POST', () => `/api/agents/${agent.id}/terminate`],
  ['DELETE', () => `/api/agents/${agent.id}`],
  ['GET', () => `/api/companies/${company.id}/secret-providers`],
  ['GET', () => `/api/companies/${company.id}/secrets`],
  ['POST', () => `/api/companies/${company.id}/secrets`, { name: 'NOPE', value: 'v' }],
  ['PATCH', () => `/api/secrets/${secret.id}`, { description: 'nope' }],
  ['POST', () => `/api/secrets/${secret.id}/rotate`, { value: 'nope' }],
  ['DELETE', () => `/api/secrets/${secret.id}`],
  ['GET', () => `/api/agents/${agent.id}/secret-grants`],
  ['POST', () => `/api/agents/${agent.id}/secret-grants`, () => ({ secretId: secret.id, key: 'NOPE', delivery: 'api' })],
  ['POST', () => `/api/companies/${company.id}/activity`, { actorId: 'x', action: 'x', entityType: 'x', entityId: 'x' }],
  ['GET', () => `/api/companies/${company.id}/resource-memberships/me`],
  ['PUT', () => `/api/companies/${company.id}/resource-memberships/me/agents/${agent.id}`, { state: 'left' }],
  ['PUT', () => `/api/companies/${company.id}/resource-memberships/me/projects/${UNKNOWN}`, { state: 'left' }],
  ['GET', () => `/api/companies/${company.id}/permission-grants`],
  ['PUT', () => `/api/companies/${company.id}/permission-grants`, () => ({ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign' })],
  ['GET', () => '/api/instance/settings/general'],
  ['PATCH', () => '/api/instance/settings/general', { instanceName: 'Nope' }],
  ['PATCH', () => '/api/instance/settings/experimental', { enableSummaries: true }],
  ['GET', () => '/api/cli-auth/me'],
  ['POST', () => `/api/cli-auth/challenges/${challengeId}/approve`],
];

/** Routes open to the board and to agents of the company (BA). */
const BOARD_OR_AGENT: Route[] = [
  ['GET', () => `/api/companies/${company.id}`],
  ['PATCH', () => `/api/companies/${company.id}`, { description: 'nope' }],
  ['PATCH', () => `/api/companies/${company.id}/branding`, { description: 'nope' }],
  ['GET', () => `/api/companies/${company.id}/agents`],
  ['POST', () => `/api/companies/${company.id}/agent-hires`, { name: 'Nope' }],
  ['GET', () => `/api/agents/${agent.id}`],
  ['PATCH', () => `/api/agents/${agent.id}`, { title: 'nope' }],
  ['PATCH', () => `/api/agents/${agent.id}/permissions`, { canCreateAgents: true }],
  ['GET', () => `/api/agents/${agent.id}/keys`],
  ['POST', () => `/api/agents/${agent.id}/keys`],
  ['POST', () => `/api/agents/${agent.id}/pause`],
  ['POST', () => `/api/agents/${agent.id}/resume`],
  ['GET', () => `/api/agents/${agent.id}/configuration`],
  ['GET', () => `/api/agents/${agent.id}/config-revisions`],
  ['GET', () => `/api/companies/${company.id}/activity`],
];

/** Agent-only routes (A). */
const AGENT_ONLY: Route[] = [
  ['GET', () => '/api/agents/me'],
  ['GET', () => '/api/agents/me/secrets'],
  ['POST', () => '/api/agents/me/secrets/ANY/value'],
];

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' });
  const ownerId = await insertUser(t);
  owner = await boardToken(t, ownerId);
  outsider = await boardToken(t, await insertUser(t));
  company = await ok(t.api.post('/api/companies', { name: 'Conformance' }, { token: owner }));
  agent = await ok(t.api.post(`/api/companies/${company.id}/agents`, { name: 'Worker', role: 'engineer' }, { token: owner }));
  agentKey = (await ok(t.api.post(`/api/agents/${agent.id}/keys`, {}, { token: owner }))).token;
  secret = await ok(t.api.post(`/api/companies/${company.id}/secrets`, { name: 'KEY', value: 'v' }, { token: owner }));
  challengeId = (await ok(t.api.post('/api/cli-auth/challenges', {}))).id;
});
afterAll(async () => { await t?.stop(); });

async function expectAll(routes: Route[], token: string | undefined, status: number, code: string | ((route: Route) => string)) {
  const before = await rowCounts();
  const seen = [];
  for (const route of routes) {
    const [method, path, body] = route;
    const res = await t.api.request(method, path(), { body: typeof body === 'function' ? body() : body, token });
    seen.push({ route: `${method} ${path()}`, status: res.status, code: res.body?.code });
  }
  const wanted = routes.map((route) => ({ route: `${route[0]} ${route[1]()}`, status, code: typeof code === 'string' ? code : code(route) }));
  expect(seen).toEqual(wanted);
  expect(await rowCounts()).toEqual(before);
}

describe('Authentication and route guards (authenticated mode)', () => {
  it('answers 401 without credentials on every non-public route, before any 403 or 404', async () => {
    await expectAll([...BOARD_ONLY, ...BOARD_OR_AGENT, ...AGENT_ONLY], undefined, 401, 'unauthorized');
    const unknownCompany = await t.api.get(`/api/companies/${UNKNOWN}/activity`);
    expect(unknownCompany.body).toEqual({ error: 'Authentication required', code: 'unauthorized' });
  });

  it('answers 401 for a token that is not a credential', async () => {
    await expectAll([...BOARD_ONLY.slice(0, 3), ...AGENT_ONLY.slice(0, 1)], 'svc_board_forged', 401, 'unauthorized');
  });

  it('refuses agent tokens on every board-only route with 403, changing nothing', async () => {
    await expectAll(BOARD_ONLY, agentKey, 403, 'board_required');
  });

  it('refuses board callers on agent-only routes with 403', async () => {
    await expectAll(AGENT_ONLY, owner, 403, 'agent_required');
  });

  it('answers 403 for a board user without membership on every company route, even for unknown ids', async () => {
    const companyRoutes = [...BOARD_ONLY, ...BOARD_OR_AGENT].filter(([, path]) => path().includes(company.id) || path().includes(agent.id) || path().includes(secret.id));
    await expectAll(companyRoutes, outsider, 403, 'company_access_denied');
    const unknown = await t.api.get(`/api/companies/${UNKNOWN}`, { token: outsider });
    expect(unknown.body).toEqual({ error: 'User does not have access to this company', code: 'company_access_denied' });
  });

  it('lets agents of the company through on BA routes, where the CEO-only and permission rules decide', async () => {
    const res = await t.api.get(`/api/companies/${company.id}`, { token: agentKey });
    expect(res.status).toBe(200);
    const branding = await t.api.patch(`/api/companies/${company.id}/branding`, { description: 'x' }, { token: agentKey });
    expect(branding.body).toEqual({ error: 'Only CEO agents can update company branding', code: 'ceo_required' });
    const approve = await t.api.post(`/api/agents/${agent.id}/approve`, undefined, { token: agentKey });
    expect(approve.body.code).toBe('board_required');
  });
});

describe('agents in terminated and pending_approval', () => {
  it('refuses the JWT of a hire waiting for approval with 401', async () => {
    const strict = await ok(t.api.post('/api/companies', { name: 'Strict', requireBoardApprovalForNewAgents: true }, { token: owner }));
    const hire = await ok(t.api.post(`/api/companies/${strict.id}/agent-hires`, { name: 'Pending', role: 'engineer' }, { token: owner }));
    expect(hire.agent.status).toBe('pending_approval');
    const jwt = await t.kernel.services.jwt.sign({ agentId: hire.agent.id, companyId: strict.id, adapterType: hire.agent.adapterType });
    expect((await t.api.get('/api/agents/me', { token: jwt })).body).toEqual({ error: 'Agent is pending approval', code: 'unauthorized' });
    const keys = await t.api.post(`/api/agents/${hire.agent.id}/keys`, {}, { token: owner });
    expect(keys.body.code).toBe('agent_inactive');
    await ok(t.api.post(`/api/agents/${hire.agent.id}/approve`, undefined, { token: owner }));
    expect((await t.api.get('/api/agents/me', { token: jwt })).status).toBe(200);
  });

  it('refuses new keys for a terminated agent with 409 and keeps its old keys refused', async () => {
    const doomed = await ok(t.api.post(`/api/companies/${company.id}/agents`, { name: 'Doomed', role: 'engineer' }, { token: owner }));
    const key = (await ok(t.api.post(`/api/agents/${doomed.id}/keys`, {}, { token: owner }))).token;
    await ok(t.api.post(`/api/agents/${doomed.id}/terminate`, undefined, { token: owner }));
    const before = await rowCounts();
    const res = await t.api.post(`/api/agents/${doomed.id}/keys`, {}, { token: owner });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'Cannot create keys for terminated agents', code: 'agent_inactive', details: { status: 'terminated' } });
    expect(await rowCounts()).toEqual(before);
    expect((await t.api.get('/api/agents/me', { token: key })).body).toEqual({ error: 'Agent is terminated', code: 'unauthorized' });
  });
});

describe('API keys are stored hashed', () => {
  it('stores only the kind and six random characters as the display prefix, even when the random part holds underscores', () => {
    expect(displayPrefix(`${AGENT_KEY_PREFIX}abcdef_ghijklmnop_qr`)).toBe(`${AGENT_KEY_PREFIX}abcdef`);
    expect(displayPrefix(`${BOARD_KEY_PREFIX}Zx_9-QwErTy_uiop_A`)).toBe(`${BOARD_KEY_PREFIX}Zx_9-Q`);
    expect(displayPrefix(`${AGENT_KEY_PREFIX}${'k'.repeat(36)}_abcde`)).toBe(`${AGENT_KEY_PREFIX}kkkkkk`);
  });

  it('never keeps more than the display prefix of a created key', async () => {
    for (let i = 0; i < 20; i++) {
      const created = await ok(t.api.post(`/api/agents/${agent.id}/keys`, { name: `k${i}` }, { token: owner }));
      expect(created.keyPrefix).toBe(created.token.slice(0, AGENT_KEY_PREFIX.length + 6));
      const row = (await t.sql.query('select * from agent_api_keys where id = $1', [created.id])).rows[0];
      expect(row.key_prefix).toBe(created.keyPrefix);
      expect(JSON.stringify(row)).not.toContain(created.token.slice(AGENT_KEY_PREFIX.length + 6));
    }
  });
});

describe('field names of the resources', () => {
  it('serves activity records with the fields of the spec', async () => {
    const entries = await ok(t.api.get(`/api/companies/${company.id}/activity`, { token: owner }));
    expect(entries.length).toBeGreaterThan(0);
    expect(Object.keys(entries[0]).sort()).toEqual(['action', 'actorId', 'actorType', 'agentId', 'companyId', 'createdAt', 'details', 'entityId', 'entityType', 'id', 'runId']);
  });

  it('serves secret metadata and provider descriptors with the fields of the spec', async () => {
    const [listed] = await ok(t.api.get(`/api/companies/${company.id}/secrets`, { token: owner }));
    expect(Object.keys(listed).sort()).toEqual(['companyId', 'createdAt', 'createdByAgentId', 'createdByUserId', 'description', 'externalRef', 'id', 'latestVersion', 'name', 'provider', 'updatedAt']);
    const providers = await ok(t.api.get(`/api/companies/${company.id}/secret-providers`, { token: owner }));
    expect(providers[0]).toMatchObject({ id: 'local_encrypted', label: expect.any(String), requiresExternalRef: false });
  });

  it('serves the company with the fields of the spec', async () => {
    const read = await ok(t.api.get(`/api/companies/${company.id}`, { token: owner }));
    for (const field of ['id', 'name', 'description', 'status', 'issuePrefix', 'issueCounter', 'budgetMonthlyCents', 'spentMonthlyCents',
      'requireBoardApprovalForNewAgents', 'brandColor', 'logoAssetId', 'logoUrl', 'createdAt', 'updatedAt']) {
      expect(read, field).toHaveProperty(field);
    }
  });

  it('serves the agent with the fields of the spec, plus chainOfCommand and access on GET of one', async () => {
    const read = await ok(t.api.get(`/api/agents/${agent.id}`, { token: owner }));
    for (const field of ['name', 'role', 'title', 'capabilities', 'reportsTo', 'adapterType', 'adapterConfig', 'runtimeConfig', 'budgetMonthlyCents',
      'spentMonthlyCents', 'status', 'permissions', 'desiredSkills', 'metadata', 'chainOfCommand', 'access']) {
      expect(read, field).toHaveProperty(field);
    }
    expect(Object.keys(read.access).sort()).toEqual(['canAssignTasks', 'grants', 'membership', 'taskAssignSource']);
  });
});
