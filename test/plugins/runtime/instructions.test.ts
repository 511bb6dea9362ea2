import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentKey, createCompany } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, wakeOk } from './helpers.ts';

/** Instructions: the managed bundle (files kept by Keel, written into each run) and an external path in the adapter configuration. */
let t: TestKernel;
let company: any;
let scripts: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Instructions Co'));
});
afterAll(async () => { await t?.stop(); });

const bundle = (agentId: string) => `/api/agents/${agentId}/instructions-bundle`;
const file = (agentId: string, path: string) => `${bundle(agentId)}/file?path=${encodeURIComponent(path)}`;
const filesOf = async (agentId: string) => (await t.sql.query('select path from plugin_runtime.instruction_files where agent_id = $1 order by path', [agentId])).rows.map((row) => row.path);

describe('the managed bundle', () => {
  it('starts empty with AGENTS.md as its entry, keeps files, answers them, and deletes them', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    const empty = await t.api.get(bundle(agent.id));
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body).toEqual({
      agentId: agent.id, mode: 'managed', entryFile: 'AGENTS.md', adapterConfigKey: null, path: null,
      materialisedEntryPath: '.keel/instructions/AGENTS.md', editable: true, files: [], totalBytes: 0,
    });

    const created = await t.api.put(file(agent.id, 'AGENTS.md'), { content: '# Be brief' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ path: 'AGENTS.md', size: 10, isEntryFile: true, editable: true, content: '# Be brief' });
    const updated = await t.api.put(file(agent.id, 'AGENTS.md'), { content: '# Be brief, always' });
    expect(updated.status).toBe(200);
    // The path may also come in the body, as the command-line client sends it.
    const nested = await t.api.put(`${bundle(agent.id)}/file`, { path: 'docs/style.md', content: 'Use plain words. é' });
    expect(nested.status, nested.text).toBe(201);
    expect(nested.body.size).toBe(19); // bytes, not characters

    const listed = await t.api.get(bundle(agent.id));
    expect(listed.body.files).toEqual([
      { path: 'AGENTS.md', size: 18, isEntryFile: true, updatedAt: expect.any(String) },
      { path: 'docs/style.md', size: 19, isEntryFile: false, updatedAt: expect.any(String) },
    ]);
    expect(listed.body.totalBytes).toBe(37);
    const read = await t.api.get(file(agent.id, 'docs/style.md'));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ path: 'docs/style.md', content: 'Use plain words. é', isEntryFile: false });

    const deleted = await t.api.delete(file(agent.id, 'docs/style.md'));
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ deleted: true, path: 'docs/style.md' });
    const gone = await t.api.get(file(agent.id, 'docs/style.md'));
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ code: 'file_not_found' });
    expect((await t.api.delete(file(agent.id, 'docs/style.md'))).status).toBe(404);
    const { rows: activity } = await t.sql.query(`select action from activity_log where entity_id = $1 and action like 'agent.instructions_%' order by seq`, [agent.id]);
    expect(activity.map((row) => row.action)).toEqual(['agent.instructions_file_written', 'agent.instructions_file_written', 'agent.instructions_file_written', 'agent.instructions_file_deleted']);
  });

  it('is written into the run\'s working directory, with SERVICE_INSTRUCTIONS_FILE naming the entry file', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'instructions.cjs'), { timeoutSec: 30 });
    expect((await t.api.put(file(agent.id, 'AGENTS.md'), { content: '# You triage issues' })).status).toBe(201);
    expect((await t.api.put(file(agent.id, 'docs/style.md'), { content: 'Short sentences.' })).status).toBe(201);
    const woken = await wakeOk(t.api, agent.id);
    const run = await runWhen(t, woken.run.id);
    expect(run.status).toBe('succeeded');
    expect(run.resultJson).toEqual({ file: '.keel/instructions/AGENTS.md', dir: '.keel/instructions', content: '# You triage issues', style: 'Short sentences.' });

    // Another entry file: the run is pointed at it.
    const renamed = await t.api.patch(bundle(agent.id), { entryFile: 'docs/style.md' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({ entryFile: 'docs/style.md', materialisedEntryPath: '.keel/instructions/docs/style.md' });
    const second = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(second.resultJson).toMatchObject({ file: '.keel/instructions/docs/style.md', content: 'Short sentences.' });
  });

  it('refuses paths that leave the bundle, oversized files and bad bodies, writing nothing', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    for (const path of ['../escape.md', '/etc/passwd', 'a/../../b.md', 'a/./b.md', 'a//b.md', 'a\\b.md', '~/x.md', 'line\nbreak.md']) {
      const res = await t.api.put(file(agent.id, path), { content: 'x' });
      expect(res.status, path).toBe(422);
      expect(res.body).toMatchObject({ code: 'invalid_path', details: { field: 'path' } });
      const read = await t.api.get(file(agent.id, path));
      expect(read.status, path).toBe(422);
    }
    // The host refuses a NUL in a query string before the plugin sees it.
    expect((await t.api.put(file(agent.id, 'nul\u0000.md'), { content: 'x' })).status).toBe(400);
    expect((await t.api.patch(bundle(agent.id), { entryFile: '../AGENTS.md' })).body).toMatchObject({ code: 'invalid_path', details: { field: 'entryFile' } });
    // 200 000 three-byte characters pass the length check but not the byte limit.
    const big = await t.api.put(file(agent.id, 'big.md'), { content: '€'.repeat(100_000) });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ code: 'file_too_large', details: { limit: 262144 } });
    const noContent = await t.api.put(file(agent.id, 'a.md'), {});
    expect(noContent.status).toBe(400);
    expect(noContent.body.code).toBe('validation_failed');
    const noPath = await t.api.get(`${bundle(agent.id)}/file`);
    expect(noPath.status).toBe(400);
    const differing = await t.api.put(file(agent.id, 'a.md'), { path: 'b.md', content: 'x' });
    expect(differing.status).toBe(422);
    expect(await filesOf(agent.id)).toEqual([]);
  });
});

describe('an external path', () => {
  it('needs the process adapter\'s adapterConfigKey and a cwd for relative paths, and is recorded in the adapter configuration', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'instructions.cjs'), { timeoutSec: 30 });
    const path = `/api/agents/${agent.id}/instructions-path`;
    const noKey = await t.api.patch(path, { path: '/srv/agents/AGENTS.md' });
    expect(noKey.status).toBe(422);
    expect(noKey.body).toMatchObject({ code: 'adapter_config_key_required', details: { field: 'adapterConfigKey' } });
    for (const key of ['command', 'env', 'cwd', 'bad key', 'instructions-path']) {
      const res = await t.api.patch(path, { path: '/srv/agents/AGENTS.md', adapterConfigKey: key });
      expect(res.status, key).toBe(422);
      expect(res.body.code).toBe('invalid_adapter_config_key');
    }
    const relative = await t.api.patch(path, { path: 'docs/AGENTS.md', adapterConfigKey: 'instructionsFilePath' });
    expect(relative.status).toBe(422);
    expect(relative.body).toMatchObject({ code: 'cwd_required' });
    const config = await t.api.get(`/api/agents/${agent.id}/configuration`);
    expect(config.body.adapterConfig.instructionsFilePath).toBeUndefined();

    const set = await t.api.patch(path, { path: '/srv/agents/../agents/triage/AGENTS.md', adapterConfigKey: 'instructionsFilePath' });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ mode: 'external', adapterConfigKey: 'instructionsFilePath', path: '/srv/agents/triage/AGENTS.md', editable: false, materialisedEntryPath: null });
    const after = await t.api.get(`/api/agents/${agent.id}/configuration`);
    expect(after.body.adapterConfig).toMatchObject({ instructionsFilePath: '/srv/agents/triage/AGENTS.md', instructionsBundleMode: 'external', command: process.execPath });
    const revisions = await t.api.get(`/api/agents/${agent.id}/config-revisions`);
    const latest = (Array.isArray(revisions.body) ? revisions.body : revisions.body.revisions ?? revisions.body.items)[0];
    expect(latest).toMatchObject({ source: 'instructions', changedKeys: ['adapterConfig'] });

    // Keel keeps no copy of an external file: the file routes say so.
    for (const res of [await t.api.get(file(agent.id, 'AGENTS.md')), await t.api.put(file(agent.id, 'AGENTS.md'), { content: 'x' }), await t.api.delete(file(agent.id, 'AGENTS.md'))]) {
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'instructions_external', details: { adapterConfigKey: 'instructionsFilePath' } });
    }
    // The run is told the path and still runs (an instructions revision is no change of what runs).
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status).toBe('succeeded');
    expect(run.resultJson).toMatchObject({ file: '/srv/agents/triage/AGENTS.md', dir: null, content: null });

    // Back to managed: the key is cleared.
    const managed = await t.api.patch(bundle(agent.id), { mode: 'managed' });
    expect(managed.status, managed.text).toBe(200);
    expect(managed.body).toMatchObject({ mode: 'managed', path: null, editable: true });
    const cleared = await t.api.get(`/api/agents/${agent.id}/configuration`);
    expect(cleared.body.adapterConfig.instructionsFilePath).toBeUndefined();
    expect(cleared.body.adapterConfig.instructionsBundleMode).toBeUndefined();
  });

  it('resolves a relative path against adapterConfig.cwd and remembers the key; other adapters default to instructionsFilePath', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), { cwd: '/srv/work/repo' });
    const first = await t.api.patch(`/api/agents/${agent.id}/instructions-path`, { path: 'team/AGENTS.md', adapterConfigKey: 'agentsMdPath' });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ path: '/srv/work/repo/team/AGENTS.md', adapterConfigKey: 'agentsMdPath' });
    const second = await t.api.patch(`/api/agents/${agent.id}/instructions-path`, { path: '../shared/AGENTS.md' });
    expect(second.body).toMatchObject({ path: '/srv/work/shared/AGENTS.md', adapterConfigKey: 'agentsMdPath' });
    const viaBundle = await t.api.patch(bundle(agent.id), { mode: 'external', path: '/opt/AGENTS.md', adapterConfigKey: 'instructionsFilePath' });
    expect(viaBundle.body).toMatchObject({ mode: 'external', path: '/opt/AGENTS.md', adapterConfigKey: 'instructionsFilePath' });
    const config = await t.api.get(`/api/agents/${agent.id}/configuration`);
    // Moving to another key removes the old one.
    expect(config.body.adapterConfig.agentsMdPath).toBeUndefined();
    expect(config.body.adapterConfig.instructionsFilePath).toBe('/opt/AGENTS.md');
    expect((await t.api.patch(bundle(agent.id), { mode: 'external' })).body).toMatchObject({ code: 'instructions_path_required' });

    const http = await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Remote', adapterType: 'http', adapterConfig: { url: 'https://agents.example.com/run' } });
    const defaulted = await t.api.patch(`/api/agents/${http.body.id}/instructions-path`, { path: '/srv/AGENTS.md' });
    expect(defaulted.status, defaulted.text).toBe(200);
    expect(defaulted.body).toMatchObject({ adapterConfigKey: 'instructionsFilePath', path: '/srv/AGENTS.md' });
  });
});

describe('who may read and change instructions', () => {
  it('the board and the agent itself; another agent needs agents:create; another company gets 403; unknown agents 404', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    const peer = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    const own = t.api.as(await createAgentKey(t.api, agent.id));
    const peerApi = t.api.as(await createAgentKey(t.api, peer.id));
    expect((await own.put(file(agent.id, 'AGENTS.md'), { content: 'mine' })).status).toBe(201);
    expect((await own.get(bundle(agent.id))).status).toBe(200);
    // An agent that points itself at another file still runs: the revision is no change of what runs.
    expect((await own.patch(`/api/agents/${agent.id}/instructions-path`, { path: '/srv/self.md', adapterConfigKey: 'instructionsFilePath' })).status).toBe(200);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status).toBe('succeeded');

    for (const res of [
      await peerApi.get(bundle(agent.id)), await peerApi.get(file(agent.id, 'AGENTS.md')), await peerApi.put(file(agent.id, 'AGENTS.md'), { content: 'theirs' }),
      await peerApi.delete(file(agent.id, 'AGENTS.md')), await peerApi.patch(bundle(agent.id), { mode: 'managed' }),
      await peerApi.patch(`/api/agents/${agent.id}/instructions-path`, { path: null }),
    ]) {
      expect(res.status, res.text).toBe(403);
      expect(res.body).toMatchObject({ code: 'permission_denied', details: { permission: 'agents:create' } });
    }
    const other = await createCompany(t.api, { name: 'Elsewhere' });
    const outsider = await processAgent(t.api, other.id, join(scripts, 'quick.cjs'));
    const outsiderApi = t.api.as(await createAgentKey(t.api, outsider.id));
    expect((await outsiderApi.get(bundle(agent.id))).status).toBe(403);
    expect((await outsiderApi.put(file(agent.id, 'AGENTS.md'), { content: 'x' })).status).toBe(403);
    expect((await t.api.get(bundle('00000000-0000-4000-8000-000000000000'))).status).toBe(404);
    const { rows } = await t.sql.query('select content from plugin_runtime.instruction_files where agent_id = $1', [agent.id]);
    expect(rows).toEqual([{ content: 'mine' }]);
  });
});
