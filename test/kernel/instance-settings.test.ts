import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_KEY_PREFIX, hashToken, mintToken } from '../../kernel/auth/tokens.ts';
import { readSettings } from '../../kernel/tenancy/instance-settings.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let local: TestKernel;
let authed: TestKernel;
beforeAll(async () => {
  [local, authed] = await Promise.all([startTestKernel(), startTestKernel({ deploymentMode: 'authenticated' })]);
});
afterAll(async () => { await Promise.all([local?.stop(), authed?.stop()]); });

const GENERAL_DEFAULTS = {
  instanceName: 'Keel', censorUsernameInLogs: false, keyboardShortcuts: false, timezone: 'UTC',
  feedbackDataSharingPreference: 'prompt', feedbackDataSharingEndpoint: null, backupRetention: { dailyDays: 7, weeklyWeeks: 4, monthlyMonths: 1 },
};
const EXPERIMENTAL_DEFAULTS = {
  enableSummaries: false, enableEnvironments: false, enableIsolatedWorkspaces: false,
  enableIssueGraphLivenessAutoRecovery: false, issueGraphLivenessAutoRecoveryLookbackHours: 24,
};

async function stored(k: TestKernel): Promise<string> {
  return JSON.stringify((await k.sql.query('select key, value from instance_settings order by key')).rows);
}

async function activityCount(k: TestKernel): Promise<number> {
  return (await k.sql.query('select count(*)::int as n from activity_log')).rows[0].n;
}

async function signUp(k: TestKernel, email: string): Promise<{ userId: string; cookie: string }> {
  const res = await k.api.post('/api/auth/sign-up', { email, password: 'password-123' });
  const token = /keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1];
  return { userId: res.body.user.id, cookie: `keel_session=${token}` };
}

describe('instance settings (local board)', () => {
  it('serves defaults before anything is stored', async () => {
    expect((await local.api.get('/api/instance/settings/general')).body).toEqual(GENERAL_DEFAULTS);
    expect((await local.api.get('/api/instance/settings/experimental')).body).toEqual(EXPERIMENTAL_DEFAULTS);
  });

  it('patches general settings, stores them and records an instance-level activity entry', async () => {
    const res = await local.api.patch('/api/instance/settings/general', { instanceName: 'Ops floor', timezone: 'Europe/Berlin' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...GENERAL_DEFAULTS, instanceName: 'Ops floor', timezone: 'Europe/Berlin' });
    expect((await local.api.get('/api/instance/settings/general')).body).toEqual(res.body);
    expect(await readSettings(local.kernel.services.db, 'general')).toEqual(res.body);
    const entry = (await local.sql.query(`select * from activity_log where action = 'instance_settings.updated' order by seq desc limit 1`)).rows[0];
    expect(entry).toMatchObject({ company_id: null, actor_type: 'user', actor_id: 'local-board', entity_type: 'instance_settings', entity_id: 'general' });
    expect(entry.details).toEqual({
      section: 'general',
      changes: { instanceName: { from: 'Keel', to: 'Ops floor' }, timezone: { from: 'UTC', to: 'Europe/Berlin' } },
    });

    const partial = await local.api.patch('/api/instance/settings/general', { keyboardShortcuts: true });
    expect(partial.body).toMatchObject({ instanceName: 'Ops floor', keyboardShortcuts: true });
  });

  it('patches feedback sharing and backup retention, a retention patch keeping the fields it does not name', async () => {
    const res = await local.api.patch('/api/instance/settings/general', { feedbackDataSharingPreference: 'not_allowed', backupRetention: { dailyDays: 14 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ feedbackDataSharingPreference: 'not_allowed', backupRetention: { dailyDays: 14, weeklyWeeks: 4, monthlyMonths: 1 } });
    const more = await local.api.patch('/api/instance/settings/general', { backupRetention: { monthlyMonths: 6 } });
    expect(more.body.backupRetention).toEqual({ dailyDays: 14, weeklyWeeks: 4, monthlyMonths: 6 });
    const entry = (await local.sql.query(`select details from activity_log where action = 'instance_settings.updated' order by seq desc limit 1`)).rows[0];
    expect(entry.details.changes).toEqual({
      backupRetention: { from: { dailyDays: 14, weeklyWeeks: 4, monthlyMonths: 1 }, to: { dailyDays: 14, weeklyWeeks: 4, monthlyMonths: 6 } },
    });
    expect((await readSettings(local.kernel.services.db, 'general')).backupRetention).toEqual(more.body.backupRetention);
    const log = await activityCount(local);
    const same = await local.api.patch('/api/instance/settings/general', { backupRetention: { dailyDays: 14 } });
    expect(same.body.backupRetention).toEqual(more.body.backupRetention);
    expect(await activityCount(local)).toBe(log);
  });

  it('names a feedback-sharing endpoint (https, or http to loopback only) and clears it with null', async () => {
    for (const endpoint of ['https://feedback.example.com/traces', 'http://127.0.0.1:9000/in', 'http://localhost/in']) {
      const res = await local.api.patch('/api/instance/settings/general', { feedbackDataSharingEndpoint: endpoint });
      expect([res.status, res.body.feedbackDataSharingEndpoint]).toEqual([200, endpoint]);
      expect((await local.api.get('/api/instance/settings/general')).body.feedbackDataSharingEndpoint).toBe(endpoint);
    }
    const cleared = await local.api.patch('/api/instance/settings/general', { feedbackDataSharingEndpoint: null });
    expect(cleared.body.feedbackDataSharingEndpoint).toBeNull();
  });

  it('patches experimental settings including enableSummaries', async () => {
    const res = await local.api.patch('/api/instance/settings/experimental', { enableSummaries: true, issueGraphLivenessAutoRecoveryLookbackHours: 48 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...EXPERIMENTAL_DEFAULTS, enableSummaries: true, issueGraphLivenessAutoRecoveryLookbackHours: 48 });
    expect((await readSettings(local.kernel.services.db, 'experimental')).enableSummaries).toBe(true);
  });

  it('rejects unknown fields with 400 naming them, and bad values, changing nothing', async () => {
    const before = await stored(local);
    const log = await activityCount(local);
    const unknown = await local.api.patch('/api/instance/settings/general', { instanceName: 'X', colour: 'red', enableSummaries: true });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: 'Unknown general settings fields: colour, enableSummaries', code: 'validation_failed' });
    expect(unknown.body.issues.map((i: { path: string }) => i.path)).toEqual(['colour', 'enableSummaries']);
    const oneUnknown = await local.api.patch('/api/instance/settings/experimental', { instanceName: 'X' });
    expect(oneUnknown.body.error).toBe('Unknown experimental settings field: instanceName');

    const bad: Array<[string, unknown]> = [
      ['general', { instanceName: '' }],
      ['general', { instanceName: '   ' }],
      ['general', { censorUsernameInLogs: 'yes' }],
      ['general', { timezone: 'Mars/Olympus' }],
      ['general', { feedbackDataSharingPreference: 'sometimes' }],
      ['general', { feedbackDataSharingEndpoint: 'http://feedback.example.com/traces' }],
      ['general', { feedbackDataSharingEndpoint: 'ftp://127.0.0.1/traces' }],
      ['general', { feedbackDataSharingEndpoint: 'https://user:pass@feedback.example.com/' }],
      ['general', { feedbackDataSharingEndpoint: 'not a url' }],
      ['general', { feedbackDataSharingEndpoint: '' }],
      ['general', { feedbackDataSharingEndpoint: 7 }],
      ['general', { backupRetention: { dailyDays: 5 } }],
      ['general', { backupRetention: { weeklyWeeks: 3 } }],
      ['general', { backupRetention: { monthlyMonths: 12 } }],
      ['general', { backupRetention: { hourlyHours: 1 } }],
      ['general', { backupRetention: {} }],
      ['general', { backupRetention: 7 }],
      ['experimental', { enableSummaries: 1 }],
      ['experimental', { issueGraphLivenessAutoRecoveryLookbackHours: 0 }],
      ['experimental', { issueGraphLivenessAutoRecoveryLookbackHours: 2.5 }],
    ];
    for (const [section, body] of bad) {
      const res = await local.api.patch(`/api/instance/settings/${section}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    const array = await local.api.patch('/api/instance/settings/general', [1]);
    expect(array.status).toBe(400);
    expect(await stored(local)).toBe(before);
    expect(await activityCount(local)).toBe(log);
  });

  it('treats a patch that changes nothing as a no-op without an activity entry', async () => {
    const current = (await local.api.get('/api/instance/settings/general')).body;
    const log = await activityCount(local);
    const same = await local.api.patch('/api/instance/settings/general', { instanceName: current.instanceName });
    expect(same.status).toBe(200);
    expect(same.body).toEqual(current);
    const empty = await local.api.patch('/api/instance/settings/general');
    expect(empty.status).toBe(200);
    expect(await activityCount(local)).toBe(log);
  });
});

describe('instance settings access (authenticated mode)', () => {
  it('lets any board read, only instance admins write; agents get 403, anonymous 401', async () => {
    const member = await signUp(authed, 'member@example.com');
    const admin = await signUp(authed, 'admin@example.com');
    await authed.sql.query('update users set is_instance_admin = true where id = $1', [admin.userId]);
    authed.kernel.services.authCache.apply({ type: 'user', id: admin.userId });

    expect((await authed.api.get('/api/instance/settings/general')).status).toBe(401);
    expect((await authed.api.patch('/api/instance/settings/general', { keyboardShortcuts: true })).status).toBe(401);
    expect((await authed.api.get('/api/instance/settings/general', { cookie: member.cookie })).status).toBe(200);
    expect((await authed.api.get('/api/instance/settings/experimental', { cookie: member.cookie })).status).toBe(200);

    const before = await stored(authed);
    const denied = await authed.api.patch('/api/instance/settings/general', { keyboardShortcuts: true }, { cookie: member.cookie });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'Instance admin access required', code: 'instance_admin_required' });
    expect(await stored(authed)).toBe(before);

    const companyId = (await authed.sql.query(`insert into companies (name, issue_prefix) values ('Co', 'SETCO') returning id`)).rows[0].id;
    const agentId = (await authed.sql.query(`insert into agents (company_id, name, url_key) values ($1, 'A', $2) returning id`,
      [companyId, `a-${randomUUID().slice(0, 8)}`])).rows[0].id;
    const agentKey = mintToken(AGENT_KEY_PREFIX);
    await authed.sql.query(`insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values ($1, $2, 'k', $3, 'svc_agent_')`,
      [agentId, companyId, hashToken(agentKey)]);
    const agentRead = await authed.api.get('/api/instance/settings/general', { token: agentKey });
    expect(agentRead.status).toBe(403);
    expect(agentRead.body.code).toBe('board_required');
    expect((await authed.api.patch('/api/instance/settings/experimental', { enableSummaries: true }, { token: agentKey })).status).toBe(403);

    const ok = await authed.api.patch('/api/instance/settings/experimental', { enableSummaries: true }, { cookie: admin.cookie });
    expect(ok.status).toBe(200);
    expect(ok.body.enableSummaries).toBe(true);
    const entry = (await authed.sql.query(`select * from activity_log where action = 'instance_settings.updated'`)).rows;
    expect(entry).toHaveLength(1);
    expect(entry[0]).toMatchObject({ company_id: null, actor_id: admin.userId, entity_id: 'experimental' });
  });
});
