import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable as enableFolder } from '../../support/plugins.ts';
import { expectKernelAlive, installAndEnable, variant } from './support.ts';

/** SANDBOX.md class 7: secret exfiltration. */
let t: TestKernel;
let company: any;
let agent: any;
let secret: any;
const SECRET_VALUE = 'vault-value-7f3a9c2e51d84b06';
const PLAIN_TOKEN = 'plain-env-token-55aa77bb';
const SIGNING_VALUE = 'sig"n\\ing/key+val=ue 77aa99';
const P = '/api/plugins/attack-secrets';
const GRANTED = '/api/plugins/attack-secrets-granted';

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  const created = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'DEPLOY_KEY', value: SECRET_VALUE });
  expect(created.status, created.text).toBe(201);
  secret = created.body;
  const signing = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'SIGNING_KEY', value: SIGNING_VALUE });
  expect(signing.status, signing.text).toBe(201);
  agent = await createAgent(t.api, company.id, { adapterConfig: { env: {
    DEPLOY_KEY: { type: 'secret_ref', secretId: secret.id }, SIGNING_KEY: { type: 'secret_ref', secretId: signing.body.id }, API_TOKEN: PLAIN_TOKEN,
  } } });
  await installAndEnable(t, 'attack-secrets');
  // A copy that declares (and is granted) secrets.resolve.
  await enableFolder(t, await variant('attack-secrets', (m) => ({
    ...m, key: 'attack-secrets-granted', capabilities: [...m.capabilities, { id: 'secrets.resolve', reason: 'Resolves run environments' }],
  })));
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

/** The forms a value may take in an output; none may appear anywhere the plugin's output goes. */
function forms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const b64 = bytes.toString('base64');
  return [value, JSON.stringify(value).slice(1, -1), b64, b64.replace(/=+$/, ''), bytes.toString('base64url'), bytes.toString('hex'), bytes.toString('hex').toUpperCase(),
    encodeURIComponent(value), Buffer.from(`user:${value}`).toString('base64').slice(8, -4)];
}

function expectNoSecret(text: string, where: string): void {
  for (const value of [SECRET_VALUE, SIGNING_VALUE]) {
    for (const form of forms(value)) expect(text.includes(form), `${where} holds ${form}`).toBe(false);
  }
}

describe('secret values the host delivered to a plugin', () => {
  const body = () => ({ agentId: agent.id, names: ['DEPLOY_KEY', 'SIGNING_KEY'] });

  it('are kept out of activity details, logs and answers in any common encoding', async () => {
    const res = await t.api.post(`${GRANTED}/companies/${company.id}/exfiltrate`, body());
    expect(res.status, res.text).toBe(200);
    expectNoSecret(res.text, 'the answer');
    expect(res.text).toContain('[REDACTED]');
    const row = (await t.sql.query("select details from activity_log where action = 'attack.secret_leak'")).rows[0];
    expect(row, 'the activity entry was written').toBeTruthy();
    expectNoSecret(JSON.stringify(row.details), 'activity details');
    expect(row.details.secret0.raw).toBe('token=[REDACTED];');
    const logs = await t.api.get(`${GRANTED}/logs`);
    expect(JSON.stringify(logs.body)).toContain('leaking');
    expectNoSecret(JSON.stringify(logs.body), 'the plugin\'s logs');
    // Kept in the isolate and sent out by a later call (one that serves no company at all).
    const later = await t.api.get(`${GRANTED}/recall`);
    expect(later.status, later.text).toBe(200);
    expect(later.body).toHaveLength(2);
    expectNoSecret(later.text, 'a later answer');
    await expectKernelAlive(t);
  });

  it('are kept out of an answer made with respond(), its headers included, which keeps its status and headers', async () => {
    const res = await t.api.post(`${GRANTED}/companies/${company.id}/exfiltrate-respond`, body());
    expect(res.status, res.text).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-leak')).toBe('token=[REDACTED];');
    expect(res.body.leaked).toHaveLength(2);
    expect(res.body.leaked[0].raw).toBe('token=[REDACTED];');
    expectNoSecret(res.text, 'the answer');
    expectNoSecret(JSON.stringify([...res.headers]), 'the answer\'s headers');
  });

  it('are kept out of the errors a plugin throws', async () => {
    const res = await t.api.post(`${GRANTED}/companies/${company.id}/exfiltrate-error`, body());
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('leak');
    expectNoSecret(res.text, 'the error');
  });
});
