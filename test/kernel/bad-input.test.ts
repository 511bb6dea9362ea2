import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type RequestOptions, type TestKernel } from '../support/harness.ts';
import { BAD_IDS, bodyShapeCases, fieldCases, UNKNOWN_UUID, type BodyCase, type FieldKind } from './bad-input-cases.ts';

/**
 * No route answers 5xx for bad input. Every mutating kernel route is sent wrong types,
 * nulls, arrays for objects, huge and NUL-carrying strings, deep nesting, malformed JSON,
 * other content types, empty bodies and ids that name nothing; each must answer 4xx with a
 * JSON `{error}` body and leave every table as it was.
 */
let t: TestKernel;
let authed: TestKernel;
const ids: Record<string, string> = {};
const LIMIT = 64 * 1024;

/** Whole-table fingerprints: row counts everywhere, full contents where rows can change in place. */
const COUNTED = ['activity_log', 'agent_api_keys', 'board_api_keys', 'user_sessions', 'runs', 'security_audit_log', 'vault_data_keys', 'agent_config_revisions'];
const HASHED = ['companies', 'agents', 'secrets', 'secret_versions', 'assets', 'permission_grants', 'company_memberships', 'resource_memberships',
  'agent_secret_grants', 'approvals', 'cli_auth_challenges', 'instance_settings', 'instance_claims', 'users', 'company_upload_limits'];

async function fingerprint(k: TestKernel): Promise<Record<string, unknown>> {
  const parts = [
    ...COUNTED.map((table) => `(select count(*) from ${table})::int as ${table}`),
    ...HASHED.map((table) => `(select count(*) || ':' || md5(coalesce(string_agg(x::text, '|' order by x::text), '')) from ${table} x) as ${table}`),
  ];
  return (await k.sql.query(`select ${parts.join(', ')}`)).rows[0];
}

function requestOptions(c: BodyCase): RequestOptions {
  if (c.raw !== undefined) return { rawBody: c.raw, headers: c.contentType ? { 'content-type': c.contentType } : {} };
  if (c.body !== undefined) return { body: c.body };
  return {};
}

/** Sends every case and returns a line for each one that was not a clean 4xx or changed a table. */
async function refusals(k: TestKernel, method: string, cases: Array<{ label: string; path: string; options: RequestOptions }>): Promise<string[]> {
  const problems: string[] = [];
  let before = await fingerprint(k);
  for (const c of cases) {
    let status = 0;
    let body: any;
    try {
      const res = await k.api.request(method, c.path, c.options);
      status = res.status;
      body = res.body;
    } catch (error) {
      problems.push(`${c.label}: request failed (${(error as Error).message})`);
      continue;
    }
    if (status < 400 || status >= 500) problems.push(`${c.label}: answered ${status} ${JSON.stringify(body)?.slice(0, 200)}`);
    else if (typeof body?.error !== 'string' || typeof body?.code !== 'string') problems.push(`${c.label}: ${status} without a JSON {error, code} body`);
    const after = await fingerprint(k);
    const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
    if (changed.length > 0) problems.push(`${c.label}: changed ${changed.join(', ')}`);
    before = after;
  }
  return problems;
}

interface JsonRoute {
  method: string;
  /** The path with `:name` placeholders filled from `ids`. */
  path: string;
  valid: () => Record<string, unknown>;
  fields: Record<string, FieldKind>;
  needsFields: boolean;
  extra?: BodyCase[];
}

const fill = (path: string, overrides: Record<string, string> = {}) =>
  path.replace(/:(\w+)/g, (_, name: string) => overrides[name] ?? ids[name] ?? `missing-${name}`);

/** Body cases at the route's real path, then the valid body at paths whose ids name nothing. */
function jsonRouteCases(route: JsonRoute, limitBytes: number) {
  const bodies = [...bodyShapeCases({ needsFields: route.needsFields, limitBytes }), ...fieldCases(route.valid(), route.fields), ...(route.extra ?? [])];
  const cases = bodies.map((c) => ({ label: c.label, path: fill(route.path), options: requestOptions(c) }));
  return [...cases, ...pathCases(route.path, { body: route.valid() })];
}

function pathCases(path: string, options: RequestOptions = {}) {
  const names = [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  return names.flatMap((name) => BAD_IDS.map(([label, value]) => ({ label: `${name} as ${label}`, path: fill(path, { [name]: value }), options })));
}

const text = (max?: number, extra: Partial<Extract<FieldKind, { kind: 'text' }>> = {}): FieldKind => ({ kind: 'text', max, ...extra });
const nullableText = (max?: number): FieldKind => ({ kind: 'text', max, nullable: true });
const stored = (nullable = false): FieldKind => ({ kind: 'object', stored: true, nullable });
const agentFields: Record<string, FieldKind> = {
  name: text(200, { blankRefused: true }), role: text(64, { blankRefused: true }), title: nullableText(200), icon: nullableText(200),
  capabilities: nullableText(20_000), reportsTo: { kind: 'uuid', nullable: true, reference: true }, adapterType: text(100, { blankRefused: true }),
  adapterConfig: stored(), runtimeConfig: stored(), budgetMonthlyCents: { kind: 'int' }, desiredSkills: { kind: 'strings', max: 500 }, metadata: stored(true),
};
const companyFields: Record<string, FieldKind> = {
  name: text(200, { blankRefused: true }), description: nullableText(10_000), budgetMonthlyCents: { kind: 'int' },
  requireBoardApprovalForNewAgents: { kind: 'bool' }, brandColor: nullableText(7),
};
const brandingFields: Record<string, FieldKind> = {
  name: companyFields.name!, description: companyFields.description!, brandColor: companyFields.brandColor!, logoAssetId: { kind: 'uuid', nullable: true, reference: true },
};

const LOCAL_ROUTES: JsonRoute[] = [
  { method: 'POST', path: '/api/companies', valid: () => ({ name: 'Fuzz Co' }), fields: companyFields, needsFields: true },
  { method: 'PATCH', path: '/api/companies/:companyId', valid: () => ({ description: 'd' }), needsFields: true,
    fields: { ...companyFields, ...brandingFields, status: { kind: 'enum' } } },
  { method: 'PATCH', path: '/api/companies/:companyId/branding', valid: () => ({ description: 'd' }), fields: brandingFields, needsFields: true,
    extra: [{ label: 'a non-branding field', body: { budgetMonthlyCents: 5 } }] },
  { method: 'POST', path: '/api/companies/:companyId/agents', valid: () => ({ name: 'Fuzz Agent' }), fields: agentFields, needsFields: true,
    extra: [{ label: 'an env value that is neither text nor a reference', body: { name: 'Fuzz', adapterConfig: { env: { A: 1 } } } },
      { label: 'a reference to an unknown secret', body: { name: 'Fuzz', adapterConfig: { env: { A: { type: 'secret_ref', secretId: UNKNOWN_UUID } } } } }] },
  { method: 'POST', path: '/api/companies/:companyId/agent-hires', valid: () => ({ name: 'Fuzz Hire' }), needsFields: true,
    fields: { ...agentFields, sourceIssueId: { kind: 'uuid', nullable: true }, sourceIssueIds: { kind: 'strings', max: 100 } } },
  { method: 'PATCH', path: '/api/agents/:agentId', valid: () => ({ title: 'Fuzzed' }), needsFields: false,
    fields: { ...agentFields, status: { kind: 'enum' }, replaceAdapterConfig: { kind: 'bool' } },
    extra: [{ label: 'permissions in the body', body: { permissions: { canCreateAgents: true } } }] },
  { method: 'PATCH', path: '/api/agents/:agentId/permissions', valid: () => ({ canCreateAgents: false }), needsFields: false,
    fields: { canCreateAgents: { kind: 'bool' }, canAssignTasks: { kind: 'bool' } } },
  { method: 'POST', path: '/api/agents/:agentId/pause', valid: () => ({ reason: 'r' }), fields: { reason: nullableText(500) }, needsFields: false },
  { method: 'POST', path: '/api/agents/:agentId/keys', valid: () => ({ name: 'k' }), fields: { name: text(100, { blankRefused: true }) }, needsFields: false },
  { method: 'PUT', path: '/api/companies/:companyId/permission-grants', needsFields: true,
    valid: () => ({ principalType: 'agent', principalId: ids.otherAgentId, permissionKey: 'tasks:assign' }),
    fields: { principalType: { kind: 'enum' }, principalId: text(200, { blankRefused: true }), permissionKey: { kind: 'enum' }, scope: stored(true) } },
  { method: 'POST', path: '/api/companies/:companyId/secrets', valid: () => ({ name: 'FUZZ', value: 'v' }), needsFields: true,
    fields: { name: text(200, { blankRefused: true }), value: text(LIMIT, { blankRefused: true, nulAllowed: true }), provider: text(undefined, { blankRefused: true }),
      description: nullableText(2000), externalRef: nullableText(2048) } },
  { method: 'PATCH', path: '/api/secrets/:secretId', valid: () => ({ description: 'd' }), needsFields: false,
    fields: { name: text(200, { blankRefused: true }), description: nullableText(2000), externalRef: nullableText(2048) },
    extra: [{ label: 'a value', body: { value: 'new' } }] },
  { method: 'POST', path: '/api/secrets/:secretId/rotate', valid: () => ({ value: 'v2' }), needsFields: true,
    fields: { value: text(LIMIT, { blankRefused: true, nulAllowed: true }), externalRef: nullableText(2048) } },
  { method: 'POST', path: '/api/agents/:agentId/secret-grants', valid: () => ({ secretId: ids.secretId, key: 'FUZZ_KEY', delivery: 'api' }), needsFields: true,
    fields: { secretId: { kind: 'uuid', reference: true }, key: text(128, { blankRefused: true }), delivery: { kind: 'enum' },
      description: nullableText(2000), projectionClass: text(64, { blankRefused: true }) },
    extra: ([['bogus', 'newest'], ['0', 0], ['a fraction', 1.5], ['null', null], ['a version the secret lacks', 99], ['an array', [1]]] as Array<[string, unknown]>)
      .map(([label, version]) => ({ label: `version as ${label}`, body: { secretId: ids.secretId, key: 'FUZZ_KEY', delivery: 'api', version } })) },
  { method: 'POST', path: '/api/companies/:companyId/activity', valid: () => ({ actorId: 'a', action: 'fuzz.tested', entityType: 'e', entityId: '1' }), needsFields: true,
    fields: { actorType: { kind: 'enum' }, actorId: text(200), action: text(200), entityType: text(200), entityId: text(500),
      agentId: { kind: 'uuid', nullable: true, reference: true }, details: stored(true) } },
  ...['approve', 'reject', 'request-revision'].map((action): JsonRoute => ({
    method: 'POST', path: `/api/approvals/:approvalId/${action}`, valid: () => ({ decisionNote: 'n' }), needsFields: false, fields: { decisionNote: nullableText(2000) },
  })),
  { method: 'PUT', path: '/api/companies/:companyId/resource-memberships/me/agents/:agentId', valid: () => ({ state: 'left' }), needsFields: true,
    fields: { state: { kind: 'enum' } } },
  { method: 'PUT', path: '/api/companies/:companyId/resource-memberships/me/projects/:projectId', valid: () => ({ state: 'left' }), needsFields: true,
    fields: { state: { kind: 'enum' } } },
  { method: 'POST', path: '/api/cli-auth/challenges', valid: () => ({ clientName: 'cli' }), needsFields: false,
    fields: { clientName: nullableText(200), keyName: nullableText(100) } },
  { method: 'POST', path: '/api/cli-auth/challenges/:challengeId/approve', valid: () => ({ keyName: 'k' }), needsFields: false, fields: { keyName: nullableText(100) } },
  { method: 'POST', path: '/api/cli-auth/challenges/:challengeId/cancel', valid: () => ({ secret: 'wrong' }), needsFields: false, fields: { secret: text(200) } },
  { method: 'PATCH', path: '/api/instance/settings/general', valid: () => ({ keyboardShortcuts: true }), needsFields: false,
    fields: { instanceName: text(100, { blankRefused: true }), censorUsernameInLogs: { kind: 'bool' }, keyboardShortcuts: { kind: 'bool' }, timezone: text(100, { blankRefused: true }),
      feedbackDataSharingPreference: { kind: 'enum' } },
    extra: [{ label: 'an unknown field', body: { bogus: 1 } }, { label: 'an unknown time zone', body: { timezone: 'Mars/Olympus' } },
      { label: 'a retention outside its choices', body: { backupRetention: { dailyDays: 5 } } },
      { label: 'an unknown retention field', body: { backupRetention: { hourlyHours: 1 } } },
      { label: 'a plain-http feedback endpoint that is not loopback', body: { feedbackDataSharingEndpoint: 'http://feedback.example.com/' } }] },
  { method: 'PUT', path: '/api/companies/:companyId/upload-limit', valid: () => ({ maxBytes: 4096 }), needsFields: true,
    fields: { maxBytes: { kind: 'int', min: 1024, max: 2 ** 40, nullable: true } } },
  { method: 'PATCH', path: '/api/instance/settings/experimental', valid: () => ({ enableSummaries: true }), needsFields: false,
    fields: { enableSummaries: { kind: 'bool' }, enableEnvironments: { kind: 'bool' }, issueGraphLivenessAutoRecoveryLookbackHours: { kind: 'int', min: 1, max: 720 } } },
];

/** Routes without a body (or whose body is never read): only their ids can be bad. */
const BODYLESS: Array<[string, string]> = [
  ['POST', '/api/companies/:companyId/archive'],
  ['DELETE', '/api/companies/:companyId'],
  ['POST', '/api/agents/:agentId/resume'],
  ['POST', '/api/agents/:agentId/approve'],
  ['POST', '/api/agents/:agentId/terminate'],
  ['DELETE', '/api/agents/:agentId'],
  ['DELETE', '/api/agents/:agentId/keys/:keyId'],
  ['POST', '/api/agents/:agentId/config-revisions/:revisionId/rollback'],
  ['DELETE', '/api/companies/:companyId/permission-grants/:grantId'],
  ['DELETE', '/api/secrets/:secretId'],
  ['DELETE', '/api/agents/:agentId/secret-grants/:secretGrantId'],
];

beforeAll(async () => {
  t = await startTestKernel({ limits: { jsonBodyBytes: LIMIT, attachmentBytes: LIMIT } });
  authed = await startTestKernel({ deploymentMode: 'authenticated' });
  const api = t.api;
  const ok = async (res: Promise<{ status: number; body: any; text: string }>) => {
    const r = await res;
    if (r.status >= 300) throw new Error(`fixture failed: ${r.status} ${r.text}`);
    return r.body;
  };
  ids.companyId = (await ok(api.post('/api/companies', { name: 'Target Co' }))).id;
  ids.agentId = (await ok(api.post(`/api/companies/${ids.companyId}/agents`, { name: 'Target', role: 'engineer' }))).id;
  ids.otherAgentId = (await ok(api.post(`/api/companies/${ids.companyId}/agents`, { name: 'Other', role: 'engineer' }))).id;
  ids.keyId = (await ok(api.post(`/api/agents/${ids.agentId}/keys`, { name: 'k' }))).id;
  ids.revisionId = (await ok(api.get(`/api/agents/${ids.agentId}/config-revisions`)))[0].id;
  ids.grantId = (await ok(api.put(`/api/companies/${ids.companyId}/permission-grants`, { principalType: 'agent', principalId: ids.agentId, permissionKey: 'tasks:assign' }))).id;
  ids.secretId = (await ok(api.post(`/api/companies/${ids.companyId}/secrets`, { name: 'TARGET', value: 's3cret' }))).id;
  ids.secretGrantId = (await ok(api.post(`/api/agents/${ids.agentId}/secret-grants`, { secretId: ids.secretId, key: 'TARGET', delivery: 'api' }))).id;
  ids.challengeId = (await ok(api.post('/api/cli-auth/challenges', { clientName: 'fuzz' }))).id;
  const strict = await ok(api.post('/api/companies', { name: 'Strict Co', requireBoardApprovalForNewAgents: true }));
  ids.approvalId = (await ok(api.post(`/api/companies/${strict.id}/agent-hires`, { name: 'Waiting' }))).approval.id;
  ids.projectId = UNKNOWN_UUID;
});
afterAll(async () => {
  await t?.stop();
  await authed?.stop();
});

describe('bad input never reaches a 5xx and never changes anything', () => {
  for (const route of LOCAL_ROUTES) {
    it(`${route.method} ${route.path}`, async () => {
      expect(await refusals(t, route.method, jsonRouteCases(route, LIMIT))).toEqual([]);
    });
  }

  for (const [method, path] of BODYLESS) {
    it(`${method} ${path} (ids)`, async () => {
      expect(await refusals(t, method, pathCases(path))).toEqual([]);
    });
  }

  it('POST /api/companies/:companyId/logo', async () => {
    const form = (type: string, bytes: Uint8Array<ArrayBuffer>, field = 'file') => {
      const data = new FormData();
      data.set(field, new Blob([bytes], { type }), 'logo');
      return data;
    };
    const path = fill('/api/companies/:companyId/logo');
    const cases: BodyCase[] = [
      { label: 'a JSON body', body: { file: 'x' } },
      { label: 'no body at all' },
      { label: 'a multipart body without the file part', raw: form('image/png', Uint8Array.of(1), 'other') },
      { label: 'a text file', raw: form('text/plain', new TextEncoder().encode('hello')) },
      { label: 'an empty image', raw: form('image/png', new Uint8Array(0)) },
      { label: 'bytes that are not a PNG', raw: form('image/png', new TextEncoder().encode('not a png')) },
      { label: 'an SVG that is not SVG', raw: form('image/svg+xml', new TextEncoder().encode('<html></html>')) },
      { label: 'a file over the limit', raw: form('image/png', new Uint8Array(LIMIT + 10)) },
      { label: 'a multipart type without a boundary', raw: 'x', contentType: 'multipart/form-data' },
      { label: 'a truncated multipart body', raw: '--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nabc', contentType: 'multipart/form-data; boundary=b' },
    ];
    const all = [...cases.map((c) => ({ label: c.label, path, options: requestOptions(c) })), ...pathCases('/api/companies/:companyId/logo', { rawBody: form('image/png', Uint8Array.of(1)) })];
    expect(await refusals(t, 'POST', all)).toEqual([]);
  });

  it('POST /api/auth/sign-up and /sign-in (authenticated mode)', async () => {
    const signUp: JsonRoute = { method: 'POST', path: '/api/auth/sign-up', valid: () => ({ email: 'fuzz@example.test', password: 'correct horse' }), needsFields: true,
      fields: { email: text(320, { blankRefused: true }), password: text(1024), name: nullableText(200) },
      extra: [{ label: 'a short password', body: { email: 'fuzz@example.test', password: 'short' } }, { label: 'an invalid email', body: { email: 'nope', password: 'correct horse' } }] };
    const signIn: JsonRoute = { method: 'POST', path: '/api/auth/sign-in', valid: () => ({ email: 'nobody@example.test', password: 'correct horse' }), needsFields: true,
      fields: { email: text(320, { blankRefused: true }), password: text(1024) } };
    expect(await refusals(authed, 'POST', jsonRouteCases(signUp, 1024 * 1024))).toEqual([]);
    expect(await refusals(authed, 'POST', jsonRouteCases(signIn, 1024 * 1024))).toEqual([]);
  });

  it('query strings of the list routes', async () => {
    const activity = fill('/api/companies/:companyId/activity');
    const agent = fill('/api/agents/:agentId');
    const cases = [
      ['a NUL in an activity filter', `${activity}?entityType=a%00b`], ['a NUL in an entityId filter', `${activity}?entityId=a%00b`],
      ['a non-uuid agentId filter', `${activity}?agentId=nope`], ['a repeated filter', `${activity}?agentId=${ids.agentId}&agentId=${ids.agentId}`],
      ['a huge filter', `${activity}?entityType=${'x'.repeat(5000)}`], ['a malformed includeArchived', '/api/companies?includeArchived=maybe'],
      ['a shortname without a company', '/api/agents/target'], ['a non-uuid companyId for a shortname', '/api/agents/target?companyId=nope'],
      ['an unknown companyId for a shortname', `/api/agents/target?companyId=${UNKNOWN_UUID}`], ['a NUL in a shortname', `/api/agents/a%00b?companyId=${ids.companyId}`],
      ['a non-uuid principalId filter on grants', `${fill('/api/companies/:companyId/permission-grants')}?principalType=robot`],
      ['an unknown approval status', `${fill('/api/companies/:companyId/approvals')}?status=open`], ['a NUL in an approval type', `${fill('/api/companies/:companyId/approvals')}?type=a%00b`],
      ['an approval limit over the maximum', `${fill('/api/companies/:companyId/approvals')}?limit=501`], ['a malformed approval id', '/api/approvals/a%00b'],
    ].map(([label, path]) => ({ label: label!, path: path!, options: {} }));
    expect(agent).toContain(ids.agentId);
    expect(await refusals(t, 'GET', cases)).toEqual([]);
  });

  it('POST /api/agents/me/secrets/:key/value with a run-bound token', async () => {
    const { runs, db } = t.kernel.services;
    const opened = await db.transaction((tx) => runs.open(tx, { agentId: ids.agentId!, companyId: ids.companyId! }));
    const keys = [['a NUL in the key', 'a%00b'], ['a key with SQL in it', encodeURIComponent("x' or '1'='1")], ['a 3,000-character key', 'k'.repeat(3000)],
      ['a malformed percent escape', '%E0%A4%A'], ['a key that is not granted', 'NOT_GRANTED']];
    const cases = keys.map(([label, key]) => ({ label: label!, path: `/api/agents/me/secrets/${key}/value`, options: { token: opened.token } }));
    expect(await refusals(t, 'POST', cases)).toEqual([]);
  });

  it('POST /api/bootstrap/claim without a browser session (authenticated mode)', async () => {
    const cases = bodyShapeCases({ needsFields: true, limitBytes: 1024 * 1024 }).map((c) => ({ label: c.label, path: '/api/bootstrap/claim', options: requestOptions(c) }));
    expect(await refusals(authed, 'POST', cases)).toEqual([]);
  });
});
