import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import { createAgent } from '../../support/fixtures.ts';
import type { Api, TestKernel } from '../../support/harness.ts';
import { acquire, count, createEnvironment, ISO, startEnvironmentsWorld, UNKNOWN_ID } from './helpers.ts';

/** Environments, their probes and leases (the local driver on this machine; the others refused). */
let world: Awaited<ReturnType<typeof startEnvironmentsWorld>>;
let t: TestKernel;
let company: any;
let other: any;
let mountA: string;
let managerApi: Api;
let plainApi: Api;
let outsiderApi: Api;
const SECRET_ID = '11111111-1111-4111-8111-111111111111';

beforeAll(async () => {
  world = await startEnvironmentsWorld();
  ({ t, company, other, mountA, managerApi, plainApi, outsiderApi } = world);
});
afterAll(async () => { await world?.stop(); });

const envs = (companyId = company.id) => `/api/companies/${companyId}/environments`;
const local = (root: string, extra: Record<string, unknown> = {}) => ({ name: 'Local', driver: 'local', config: { root }, ...extra });

describe('driver capabilities', () => {
  it('lists local as supported and ssh, sandbox and plugin as not configured', async () => {
    const res = await t.api.get(`${envs()}/capabilities`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.drivers.map((d: any) => [d.driver, d.status, d.configured])).toEqual([
      ['local', 'supported', true], ['ssh', 'not_configured', false], ['sandbox', 'not_configured', false], ['plugin', 'not_configured', false],
    ]);
    expect(res.body.drivers[0]).toMatchObject({ supportsSavedProbe: true, supportsUnsavedProbe: true, supportsReusableLeases: true, configSchema: { required: ['root'] } });
    expect(res.body.drivers[1].reason).toMatch(/SSH/);
    expect((await plainApi.get(`${envs()}/capabilities`)).status).toBe(200);
  });
});

describe('environments', () => {
  it('creates a local environment with defaults, variables and secret references, reads, lists, patches and deletes it, with activity', async () => {
    await mkdir(join(mountA, 'crud'));
    const env = await createEnvironment(t.api, company.id, local(`${mountA}/crud/`, {
      description: 'Runs here', envVars: { NODE_ENV: 'test', API_TOKEN: { type: 'secret_ref', secretId: SECRET_ID, version: 'latest' } },
    }));
    expect(env).toEqual({
      id: expect.any(String), companyId: company.id, name: 'Local', description: 'Runs here', driver: 'local', status: 'active',
      config: { root: `${mountA}/crud` }, envVars: { NODE_ENV: 'test', API_TOKEN: { type: 'secret_ref', secretId: SECRET_ID, version: 'latest' } },
      maxConcurrentLeases: 10, metadata: null, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    expect((await t.api.get(`/api/environments/${env.id}`)).body).toEqual(env);
    expect((await t.api.get(envs())).body.map((e: any) => e.id)).toContain(env.id);
    expect((await t.api.get(`${envs()}?driver=ssh`)).body).toEqual([]);
    const patched = await managerApi.patch(`/api/environments/${env.id}`, { name: 'Renamed', maxConcurrentLeases: 3, metadata: { team: 'core' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Renamed', maxConcurrentLeases: 3, metadata: { team: 'core' }, config: env.config });
    const removed = await managerApi.delete(`/api/environments/${env.id}`);
    expect(removed.status, removed.text).toBe(200);
    expect((await t.api.get(`/api/environments/${env.id}`)).body).toMatchObject({ error: 'Environment not found' });
    const { rows } = await t.sql.query("select action, details from activity_log where entity_id = $1 and action like 'environment.%' order by seq", [env.id]);
    expect(rows.map((r: any) => r.action)).toEqual(['environment.created', 'environment.updated', 'environment.deleted']);
    expect(rows[0].details).toMatchObject({ name: 'Local', driver: 'local', envVarNames: ['NODE_ENV', 'API_TOKEN'] });
    // Names only: no value of a variable, plain or reference, reaches the activity log.
    expect(JSON.stringify(rows)).not.toContain(SECRET_ID);
    expect(rows[1].details).toMatchObject({ changedFields: ['maxConcurrentLeases', 'metadata', 'name'] });
  });

  it('refuses bad bodies with the JSON error and writes nothing', async () => {
    const before = await count(t, 'environments');
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ name: 'x', driver: 'local' }, 400, 'validation_failed'],
      [{ ...local(mountA), extra: true }, 400, 'validation_failed'],
      [local('relative/root'), 400, 'validation_failed'],
      [{ ...local(mountA), driver: 'docker' }, 400, 'validation_failed'],
      [local(`${mountA}/../etc`), 422, 'invalid_environment_config'],
      [{ name: 'x', driver: 'local', config: {} }, 422, 'invalid_environment_config'],
      [{ name: 'x', driver: 'local', config: { root: mountA, host: 'h' } }, 422, 'invalid_environment_config'],
      [{ name: 'x', driver: 'ssh', config: { host: 'build.example.com' } }, 422, 'driver_not_configured'],
      [{ name: 'x', driver: 'sandbox', config: { provider: 'e2b' } }, 422, 'driver_not_configured'],
      [local(mountA, { envVars: { GITHUB_TOKEN: 'ghp_plain' } }), 422, 'secret_value_in_plain_text'],
      [local(mountA, { envVars: { 'BAD NAME': 'x' } }), 400, 'validation_failed'],
      [local(mountA, { envVars: { KEY: { type: 'secret_ref', secretId: 'nope' } } }), 400, 'validation_failed'],
      [local(mountA, { maxConcurrentLeases: 0 }), 400, 'validation_failed'],
      [local(mountA, { metadata: { big: 'y'.repeat(20_000) } }), 400, 'metadata_too_large'],
    ];
    for (const [body, status, code] of cases) {
      const res = await t.api.post(envs(), body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body, JSON.stringify(body)).toMatchObject({ error: expect.any(String), code });
    }
    const ssh = await t.api.post(envs(), { name: 'x', driver: 'ssh', config: { host: 'h' } });
    expect(ssh.body.error).toMatch(/ssh driver is not available/);
    const env = await createEnvironment(t.api, company.id, local(mountA));
    expect((await t.api.patch(`/api/environments/${env.id}`, {})).status).toBe(400);
    expect((await t.api.patch(`/api/environments/${env.id}`, { driver: 'ssh' })).status).toBe(400);
    expect((await t.api.patch(`/api/environments/${env.id}`, { envVars: { DB_PASSWORD: 'hunter2' } })).body.code).toBe('secret_value_in_plain_text');
    expect((await t.api.get(`/api/environments/${env.id}`)).body).toEqual(env);
    expect(await count(t, 'environments')).toBe(before + 1);
  });

  it('needs environments:manage for an agent to write; reading needs company access only', async () => {
    const before = await count(t, 'environments');
    const refused = await plainApi.post(envs(), local(mountA));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'Missing permission: environments:manage', code: 'permission_denied' });
    const env = await createEnvironment(managerApi, company.id, local(mountA, { name: 'By agent' }));
    for (const res of [
      await plainApi.patch(`/api/environments/${env.id}`, { name: 'no' }),
      await plainApi.delete(`/api/environments/${env.id}`),
      await plainApi.post(`/api/environments/${env.id}/leases`, {}),
      await plainApi.post(`/api/environments/${env.id}/probe`, {}),
      await plainApi.post(`${envs()}/probe-config`, { driver: 'local', config: { root: mountA } }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('permission_denied');
    }
    expect((await plainApi.get(`/api/environments/${env.id}`)).status).toBe(200);
    expect((await plainApi.get(`/api/environments/${env.id}/leases`)).status).toBe(200);
    expect(await count(t, 'environments')).toBe(before + 1);
  });

  it('answers 403 to another company on every route and 404 for unknown ids', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Private' }));
    const lease = await acquire(t.api, env.id);
    const envsBefore = await count(t, 'environments');
    for (const res of [
      await outsiderApi.get(envs()),
      await outsiderApi.post(envs(), local(mountA)),
      await outsiderApi.get(`${envs()}/capabilities`),
      await outsiderApi.post(`${envs()}/probe-config`, { driver: 'local', config: { root: mountA } }),
      await outsiderApi.get(`/api/environments/${env.id}`),
      await outsiderApi.patch(`/api/environments/${env.id}`, { name: 'stolen' }),
      await outsiderApi.delete(`/api/environments/${env.id}`),
      await outsiderApi.post(`/api/environments/${env.id}/probe`, {}),
      await outsiderApi.get(`/api/environments/${env.id}/leases`),
      await outsiderApi.post(`/api/environments/${env.id}/leases`, {}),
      await outsiderApi.get(`/api/environment-leases/${lease.id}`),
      await outsiderApi.post(`/api/environment-leases/${lease.id}/release`, {}),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: expect.any(String) });
    }
    expect(await count(t, 'environments')).toBe(envsBefore);
    expect((await t.api.get(`/api/environment-leases/${lease.id}`)).body.status).toBe('active');
    expect((await t.api.get(`/api/environments/${UNKNOWN_ID}`)).body).toMatchObject({ error: 'Environment not found' });
    expect((await t.api.get('/api/environments/not-a-uuid')).status).toBe(404);
    expect((await t.api.get(`/api/environment-leases/${UNKNOWN_ID}`)).body).toMatchObject({ error: 'Environment lease not found' });
    // The other company's own environments are listed to it, not to this one.
    const theirs = await createEnvironment(t.api, other.id, local(world.mountB, { name: 'Theirs' }));
    expect((await t.api.get(envs())).body.map((e: any) => e.id)).not.toContain(theirs.id);
  });
});

describe('probes', () => {
  it('probes a candidate config without saving: ready root, missing root, a root outside the mounted folder', async () => {
    const before = await count(t, 'environments');
    const probe = (root: string) => t.api.post(`${envs()}/probe-config`, { driver: 'local', config: { root } });
    const ready = await probe(mountA);
    expect(ready.status, ready.text).toBe(200);
    expect(ready.body).toMatchObject({ ok: true, driver: 'local', summary: 'The local root is ready', probedAt: expect.stringMatching(ISO) });
    expect(ready.body.checks.map((c: any) => [c.key, c.ok])).toEqual([['root_approved', true], ['root_exists', true], ['root_is_directory', true], ['root_writable', true]]);
    const missing = await probe(`${mountA}/does-not-exist`);
    expect(missing.body).toMatchObject({ ok: false, summary: 'The root does not exist' });
    const outside = await probe('/etc');
    expect(outside.body).toMatchObject({ ok: false, checks: [{ key: 'root_approved', ok: false }] });
    // Another company's mounted folder is outside this company's.
    expect((await probe(world.mountB)).body.ok).toBe(false);
    expect((await t.api.post(`${envs()}/probe-config`, { driver: 'ssh', config: { host: 'h' } })).body.code).toBe('driver_not_configured');
    expect((await t.api.post(`${envs()}/probe-config`, { driver: 'local', config: { root: mountA }, name: 'x' })).status).toBe(400);
    expect(existsSync(join(mountA, 'does-not-exist'))).toBe(false);
    expect(await count(t, 'environments')).toBe(before);
  });

  it('probes a saved environment', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Probed' }));
    const res = await t.api.post(`/api/environments/${env.id}/probe`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ environmentId: env.id, ok: true, driver: 'local' });
  });
});

describe('leases', () => {
  it('hands out an ephemeral lease as a fresh directory and removes it on release; releasing twice changes nothing', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Ephemeral' }));
    const lease = await acquire(t.api, env.id, { runId: UNKNOWN_ID });
    expect(lease).toEqual({
      id: expect.any(String), companyId: company.id, environmentId: env.id, policy: 'ephemeral', reuseKey: null, path: `${mountA}/leases/${lease.id}`,
      status: 'active', runId: UNKNOWN_ID, issueId: null, executionWorkspaceId: null, acquiredAt: expect.stringMatching(ISO), releasedAt: null, releaseReason: null,
    });
    expect(existsSync(lease.path)).toBe(true);
    expect((await t.api.get(`/api/environment-leases/${lease.id}`)).body).toEqual(lease);
    expect((await t.api.get(`/api/environments/${env.id}/leases`)).body).toEqual([lease]);
    const released = await managerApi.post(`/api/environment-leases/${lease.id}/release`, { reason: 'run finished' });
    expect(released.status, released.text).toBe(200);
    expect(released.body).toMatchObject({ status: 'released', releaseReason: 'run finished', releasedAt: expect.stringMatching(ISO) });
    expect(existsSync(lease.path)).toBe(false);
    const again = await t.api.post(`/api/environment-leases/${lease.id}/release`, { reason: 'again' });
    expect(again.body).toEqual(released.body);
    expect((await t.api.get(`/api/environments/${env.id}/leases?status=active`)).body).toEqual([]);
    const { rows } = await t.sql.query("select action from activity_log where entity_id = $1 and action like 'environment.lease_%' order by seq", [env.id]);
    expect(rows.map((r: any) => r.action)).toEqual(['environment.lease_acquired', 'environment.lease_released']);
  });

  it('holds a reusable lease for one run at a time and keeps its directory between leases', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Reusable' }));
    const first = await acquire(t.api, env.id, { policy: 'reusable', reuseKey: 'issue-12' });
    expect(first.path).toBe(`${mountA}/reusable/issue-12`);
    await writeFile(join(first.path, 'state.txt'), 'kept');
    const held = await t.api.post(`/api/environments/${env.id}/leases`, { policy: 'reusable', reuseKey: 'issue-12' });
    expect(held.status).toBe(409);
    expect(held.body).toMatchObject({ code: 'lease_in_use', details: { leaseId: first.id } });
    await t.api.post(`/api/environment-leases/${first.id}/release`, {});
    expect(existsSync(join(first.path, 'state.txt'))).toBe(true);
    const second = await acquire(t.api, env.id, { policy: 'reusable', reuseKey: 'issue-12' });
    expect(second.id).not.toBe(first.id);
    expect(second.path).toBe(first.path);
  });

  it('refuses leases beyond the limit, of an archived environment, and bad bodies, writing nothing', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Limited', maxConcurrentLeases: 1 }));
    await acquire(t.api, env.id);
    const before = await count(t, 'environment_leases');
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{}, 409, 'lease_limit_reached'],
      [{ policy: 'reusable' }, 422, 'reuse_key_required'],
      [{ reuseKey: 'k' }, 422, 'reuse_key_not_allowed'],
      [{ policy: 'reusable', reuseKey: '../escape' }, 400, 'validation_failed'],
      [{ policy: 'sticky' }, 400, 'validation_failed'],
      [{ runId: 'x' }, 400, 'validation_failed'],
      [{ executionWorkspaceId: UNKNOWN_ID }, 422, 'execution_workspace_not_found'],
    ];
    for (const [body, status, code] of cases) {
      const res = await t.api.post(`/api/environments/${env.id}/leases`, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body).toMatchObject({ error: expect.any(String), code });
    }
    const archived = await createEnvironment(t.api, company.id, local(mountA, { name: 'Archived' }));
    await t.api.patch(`/api/environments/${archived.id}`, { status: 'archived' });
    expect((await t.api.post(`/api/environments/${archived.id}/leases`, {})).body.code).toBe('environment_archived');
    // A root outside the mounted folder cannot hold a lease directory.
    const outside = await createEnvironment(t.api, company.id, local('/var/tmp/keel-not-mounted', { name: 'Outside' }));
    const refused = await t.api.post(`/api/environments/${outside.id}/leases`, {});
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'lease_directory_unavailable', details: { cause: 'path_not_approved' } });
    expect(existsSync('/var/tmp/keel-not-mounted')).toBe(false);
    expect(await count(t, 'environment_leases')).toBe(before);
  });

  it('releases the leases of a run when the run ends (run.closed), once', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Run-bound' }));
    const agent = await createAgent(t.api, company.id, { name: 'Runner' });
    const { runs, db } = t.kernel.services;
    const opened = await db.transaction((tx) => runs.open(tx, { agentId: agent.id, companyId: company.id, invocationSource: 'on_demand' }));
    const runId = opened.run.runId;
    const ephemeral = await acquire(t.api, env.id, { runId });
    const reusable = await acquire(t.api, env.id, { runId, policy: 'reusable', reuseKey: 'run-bound' });
    const unrelated = await acquire(t.api, env.id, {});
    await db.transaction((tx) => runs.close(tx, runId, { status: 'succeeded' }));
    await eventsSettled(t);
    expect((await t.api.get(`/api/environment-leases/${ephemeral.id}`)).body).toMatchObject({ status: 'released', releaseReason: 'run_closed' });
    expect((await t.api.get(`/api/environment-leases/${reusable.id}`)).body).toMatchObject({ status: 'released', releaseReason: 'run_closed' });
    expect((await t.api.get(`/api/environment-leases/${unrelated.id}`)).body.status).toBe('active');
    expect(existsSync(ephemeral.path)).toBe(false);
    expect(existsSync(reusable.path)).toBe(true);
    const { rows } = await t.sql.query("select count(*)::int as n from activity_log where entity_id = $1 and action = 'environment.lease_released'", [env.id]);
    expect(rows[0].n).toBe(2);
  });

  it('refuses to delete an environment with an active lease', async () => {
    const env = await createEnvironment(t.api, company.id, local(mountA, { name: 'Busy' }));
    const lease = await acquire(t.api, env.id);
    const res = await t.api.delete(`/api/environments/${env.id}`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'environment_in_use', details: { activeLeases: 1, openExecutionWorkspaces: 0 } });
    await t.api.post(`/api/environment-leases/${lease.id}/release`, {});
    expect((await t.api.delete(`/api/environments/${env.id}`)).status).toBe(200);
    expect((await t.api.get(`/api/environment-leases/${lease.id}`)).status).toBe(404);
  });
});
