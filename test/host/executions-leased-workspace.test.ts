import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * The executor's own checks of a leased working directory (ProcessExecutionInput.workspace),
 * through a test plugin that can pass anything (fixtures/exec-fx), so that every check is the
 * kernel's and not the environments plugin's: the directory must be the lease's, inside a
 * read-write folder an operator mounted for the run's company (links resolved), reachable by
 * the agent user; the agent's approved configuration must name the environment; variable names
 * follow the run-variable rule; secret references resolve in the company's vault.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/exec-fx', import.meta.url));
const KEY = 'exec-fx';
const AGENT = `const fs = require('node:fs');
console.log(JSON.stringify({ type: 'seen', cwd: process.cwd(), region: process.env.REGION ?? null, token: process.env.DEPLOY_TOKEN ?? null, tokenBackwards: [...(process.env.DEPLOY_TOKEN ?? '')].reverse().join(''),
  own: process.env.OWN ?? null, file: fs.readFileSync('notes/a.txt', 'utf8'), wrote: (fs.writeFileSync('out.txt', 'ok'), true) }));`;
let t: TestKernel;
let base: string;
let companyId: string;
let otherId: string;
let mount: string;
let otherMount: string;
let outside: string;
let script: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'keel-leased-')));
  await chmod(base, 0o755);
  script = join(base, 'agent.cjs');
  await writeFile(script, AGENT, { mode: 0o644 });
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, FIXTURE);
  companyId = (await createCompany(t.api, { name: 'Leased Co' })).id;
  otherId = (await createCompany(t.api, { name: 'Other Leased Co' })).id;
  mount = await mountFor(companyId, 'a');
  otherMount = await mountFor(otherId, 'b');
  outside = join(base, 'outside');
  await mkdir(outside, { mode: 0o755 });
});
afterAll(async () => {
  await t?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

async function mountFor(company: string, name: string): Promise<string> {
  const dir = join(base, name);
  await mkdir(dir, { mode: 0o755 });
  const res = await t.api.put(`/api/plugins/environments/companies/${company}/local-folders/workspaces`, { path: dir });
  expect(res.status, res.text).toBeLessThan(300);
  return dir;
}

/** A lease directory as the environments plugin makes it: `<root>/leases/<leaseId>`, the server's, 0755. */
async function leaseDir(root: string): Promise<{ leaseId: string; cwd: string }> {
  const leaseId = randomUUID();
  const cwd = join(root, 'leases', leaseId);
  await mkdir(cwd, { recursive: true, mode: 0o755 });
  return { leaseId, cwd };
}

const agentIn = (environmentId: string | null, config: Record<string, unknown> = {}, company = companyId) =>
  createAgent(t.api, company, { adapterType: 'process', adapterConfig: { command: process.execPath, args: [script], ...(environmentId ? { environmentId } : {}), ...config } });

const start = (agentId: string, workspace: Record<string, unknown> | undefined, company = companyId) =>
  t.api.post(`/api/plugins/${KEY}/companies/${company}/start`, { agentId, execution: { kind: 'process', files: [{ path: 'notes/a.txt', content: 'instructions' }], ...(workspace ? { workspace } : {}) } });

async function seen(executionId: string): Promise<any> {
  const until = Date.now() + 20_000;
  for (;;) {
    const rows = (await t.sql.query(`select name, payload from plugin_execfx.received where execution_id = $1 order by n`, [executionId])).rows as Array<{ name: string; payload: any }>;
    const finished = rows.find((row) => row.name === 'execution.finished');
    if (finished) return { finished: finished.payload, outputs: rows.filter((row) => row.name === 'execution.output').flatMap((row) => row.payload.outputs.map((o: any) => o.data)) };
    if (Date.now() > until) throw new Error('timed out waiting for execution.finished');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function refused(res: { status: number; body: any; text: string }, status: number, code: string): Promise<void> {
  expect(res.status, res.text).toBe(status);
  expect(res.body.code).toBe(code);
}

describe('a process in a leased directory', () => {
  it('runs in the lease directory, handed to the agent user, with the environment\'s variables under the agent\'s own; a secret reference is resolved and audited', async () => {
    const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'DEPLOY', value: 'the-deploy-token' });
    expect(secret.status, secret.text).toBe(201);
    const environmentId = randomUUID();
    const agent = await agentIn(environmentId, { env: { OWN: 'the agent', REGION: 'the agent wins' } });
    const { leaseId, cwd } = await leaseDir(join(mount, 'env1'));
    const res = await start(agent.id, { environmentId, leaseId, cwd, env: { REGION: 'eu-west', DEPLOY_TOKEN: { type: 'secret_ref', secretId: secret.body.id } } });
    expect(res.status, res.text).toBe(200);
    const { finished, outputs } = await seen(res.body.execution.executionId);
    expect(finished.status).toBe('succeeded');
    // The secret reached the process; printed as it is, it is masked in everything the output becomes.
    expect(outputs[0]).toMatchObject({ type: 'seen', cwd, region: 'the agent wins', token: '***', tokenBackwards: 'nekot-yolped-eht', own: 'the agent', file: 'instructions', wrote: true });
    if (process.getuid?.() === 0) {
      const info = await stat(cwd);
      expect(info.uid).not.toBe(0);
      expect(info.mode & 0o777).toBe(0o700);
    }
    const audit = (await t.sql.query(`select details from security_audit_log where run_id = $1 and event = 'secret.environment_resolved'`, [res.body.runId])).rows;
    expect(audit).toEqual([{ details: { plugin: KEY, execution: true, environmentId, leaseId, secrets: [{ envName: 'DEPLOY_TOKEN', secretId: secret.body.id, version: 1, source: 'environment' }] } }]);
  });
});

describe('refusals before anything starts', () => {
  const noExecution = async (runId: string) => expect((await t.sql.query('select count(*)::int as n from executions where run_id = $1', [runId])).rows[0].n).toBe(0);

  it('refuses a directory outside the company\'s mounted folder, in another company\'s, behind a link, or not the lease\'s own', async () => {
    const environmentId = randomUUID();
    const agent = await agentIn(environmentId);
    const outsideLease = await leaseDir(outside);
    const foreignLease = await leaseDir(join(otherMount, 'theirs'));
    // A root inside the mount that is a link to a folder outside it.
    await symlink(outside, join(mount, 'linked-root'));
    const linkedRoot = await leaseDir(join(mount, 'linked-root'));
    // A lease directory that is itself a link out.
    const escapeId = randomUUID();
    await mkdir(join(mount, 'env2', 'leases'), { recursive: true });
    await mkdir(join(outside, escapeId));
    await symlink(join(outside, escapeId), join(mount, 'env2', 'leases', escapeId));
    const cases = [
      { leaseId: outsideLease.leaseId, cwd: outsideLease.cwd },
      { leaseId: foreignLease.leaseId, cwd: foreignLease.cwd },
      { leaseId: linkedRoot.leaseId, cwd: join(mount, 'linked-root', 'leases', linkedRoot.leaseId) },
      { leaseId: escapeId, cwd: join(mount, 'env2', 'leases', escapeId) },
      { leaseId: randomUUID(), cwd: mount },
      { leaseId: randomUUID(), cwd: '/etc' },
    ];
    for (const workspace of cases) {
      const res = await start(agent.id, { environmentId, ...workspace });
      await refused(res, 403, 'workspace_outside_mount');
    }
    const missing = randomUUID();
    await refused(await start(agent.id, { environmentId, leaseId: missing, cwd: join(mount, 'env2', 'leases', missing) }), 409, 'workspace_unavailable');
    const runs = (await t.sql.query('select id from runs where agent_id = $1', [agent.id])).rows;
    for (const run of runs) await noExecution(run.id);
  });

  it('refuses variables that could change what the command runs, and secrets of another company', async () => {
    const environmentId = randomUUID();
    const agent = await agentIn(environmentId);
    for (const name of ['LD_PRELOAD', 'PATH', 'NODE_OPTIONS', 'BASH_ENV', 'SERVICE_API_KEY', 'PYTHONPATH', 'ld_preload']) {
      const { leaseId, cwd } = await leaseDir(join(mount, 'env3'));
      await refused(await start(agent.id, { environmentId, leaseId, cwd, env: { [name]: '/tmp/x' } }), 409, 'environment_variable_refused');
    }
    const foreign = await t.api.post(`/api/companies/${otherId}/secrets`, { name: 'THEIRS', value: 'their-value' });
    const { leaseId, cwd } = await leaseDir(join(mount, 'env3'));
    const res = await start(agent.id, { environmentId, leaseId, cwd, env: { TOKEN: { type: 'secret_ref', secretId: foreign.body.id } } });
    await refused(res, 422, 'secret_ref_unresolvable');
    expect(res.text).not.toContain('their-value');
  });

  it('takes a lease only for the environment the agent\'s approved configuration names, and never runs such an agent without one', async () => {
    const environmentId = randomUUID();
    const { leaseId, cwd } = await leaseDir(join(mount, 'env4'));
    const plain = await agentIn(null);
    await refused(await start(plain.id, { environmentId, leaseId, cwd }), 409, 'environment_not_approved');
    const named = await agentIn(environmentId);
    await refused(await start(named.id, { environmentId: randomUUID(), leaseId, cwd }), 409, 'environment_not_approved');
    await refused(await start(named.id, undefined), 409, 'environment_lease_required');
    const both = await agentIn(environmentId, { cwd: '/tmp' });
    await refused(await start(both.id, { environmentId, leaseId, cwd }), 409, 'adapter_config_invalid');
    // Another company's agent cannot use this company's mount either.
    const foreignAgent = await agentIn(environmentId, {}, otherId);
    await refused(await start(foreignAgent.id, { environmentId, leaseId, cwd }, otherId), 403, 'workspace_outside_mount');
  });

  it.runIf(process.getuid?.() === 0)('refuses a directory the agent user cannot reach, or whose parent it could write in', async () => {
    const environmentId = randomUUID();
    const agent = await agentIn(environmentId);
    const root = join(mount, 'closed');
    const { leaseId, cwd } = await leaseDir(root);
    await chmod(root, 0o700);
    await refused(await start(agent.id, { environmentId, leaseId, cwd }), 409, 'workspace_not_accessible');
    // A parent the agent user could write in (it could swap the directory for a link while the kernel writes the run's files).
    const open = await leaseDir(join(mount, 'open'));
    await chmod(join(mount, 'open', 'leases'), 0o777);
    await refused(await start(agent.id, { environmentId, leaseId: open.leaseId, cwd: open.cwd }), 409, 'workspace_not_accessible');
  });
});
