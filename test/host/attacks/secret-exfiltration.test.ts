import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, installAndEnable } from './support.ts';

/** SANDBOX.md class 7: secret exfiltration. */
let t: TestKernel;
let company: any;
let agent: any;
let secret: any;
const SECRET_VALUE = 'vault-value-7f3a9c2e51d84b06';
const PLAIN_TOKEN = 'plain-env-token-55aa77bb';
const P = '/api/plugins/attack-secrets';

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  const created = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'DEPLOY_KEY', value: SECRET_VALUE });
  expect(created.status, created.text).toBe(201);
  secret = created.body;
  agent = await createAgent(t.api, company.id, { adapterConfig: { env: { DEPLOY_KEY: { type: 'secret_ref', secretId: secret.id }, API_TOKEN: PLAIN_TOKEN } } });
  await installAndEnable(t, 'attack-secrets');
});
afterAll(async () => { await t?.stop(); });

describe('a plugin not granted secrets.resolve', () => {
  it('finds no secrets capability, and the raw bridge call is refused', async () => {
    const res = await t.api.post(`${P}/companies/${company.id}/steal`, { agentId: agent.id, secretId: secret.id });
    expect(res.status, res.text).toBe(200);
    expect(res.body.hasSecrets).toBe(false);
    expect(res.body.raw.e).toMatchObject({ status: 403, code: 'capability_denied' });
    expect(res.body.sql.e).toMatchObject({ status: 403, code: 'capability_denied' });
    // What agents.read shows is the redacted view: no configuration at all.
    expect(res.body.agent.value).toMatchObject({ id: agent.id, adapterConfig: {}, configRedacted: true });
    for (const error of res.body.errors) expect(error.error ?? error.value).toBeDefined();
    expect(res.text).not.toContain(SECRET_VALUE);
    expect(res.text).not.toContain(PLAIN_TOKEN);
    // The denial is logged for the operator, without values.
    const logs = await t.api.get(`${P}/logs`);
    expect(JSON.stringify(logs.body)).toContain('denied secrets.resolveEnvironment');
    expect(JSON.stringify(logs.body)).not.toContain(SECRET_VALUE);
    expect((await t.sql.query("select count(*)::int as n from security_audit_log where event = 'secret.environment_resolved'")).rows[0].n).toBe(0);
  });
});

describe('activity written by a plugin', () => {
  it('is sanitised: sensitive keys and token-shaped strings are redacted, however deep', async () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlc2lnbmF0dXJl';
    const res = await t.api.post(`${P}/companies/${company.id}/record`, {
      token: 'abc', apiKey: 'k-1', password: 'p', authorization: 'Basic xyz', clientSecret: 'cs',
      note: `header was Bearer abcdefghijklmnopqrstuvwxyz0123 and ${jwt}`,
      board: 'svc_board_AAAAAAAAAAAAAAAAAAAAAAAA',
      nested: { deeper: { privateKey: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----', cookie: 'c=1' } },
      list: [{ sessionKey: 's' }, 'Bearer zyxwvutsrqponmlkjihgfedcba9876'],
      harmless: 'kept',
    });
    expect(res.status, res.text).toBe(200);
    const row = (await t.sql.query("select details, actor_id, company_id from activity_log where action = 'attack.secrets_probe'")).rows[0];
    expect(row.company_id).toBe(company.id);
    expect(row.actor_id).toBe('local-board');
    const details = row.details;
    for (const key of ['token', 'apiKey', 'password', 'authorization', 'clientSecret']) expect(details[key], key).toBe('[REDACTED]');
    expect(details.note).toBe('header was [REDACTED] and [REDACTED]');
    expect(details.board).toBe('[REDACTED]');
    expect(details.nested.deeper).toEqual({ privateKey: '[REDACTED]', cookie: '[REDACTED]' });
    expect(details.list).toEqual([{ sessionKey: '[REDACTED]' }, '[REDACTED]']);
    expect(details.harmless).toBe('kept');
    expect(details.plugin).toBe('attack-secrets');
    const text = JSON.stringify(details);
    for (const leaked of ['abcdefghijklmnop', 'svc_board_AAAA', 'MIIB', jwt]) expect(text).not.toContain(leaked);
    await expectKernelAlive(t);
  });
});
