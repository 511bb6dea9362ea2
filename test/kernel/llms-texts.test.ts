import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTER_CATALOG, BUILT_IN_ADAPTER_TYPES } from '../../sdk/shared/adapter-catalog.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let t: TestKernel;
let companyId: string;
let hirerKey: string;
let workerKey: string;
beforeAll(async () => {
  t = await startTestKernel();
  companyId = (await createCompany(t.api, { name: 'Texts' })).id;
  // The CEO role is given canCreateAgents on create.
  const hirer = await createAgent(t.api, companyId, { name: 'Hirer', role: 'ceo' });
  expect(hirer.permissions).toEqual({ canCreateAgents: true });
  const worker = await createAgent(t.api, companyId, { name: 'Worker' });
  hirerKey = await createAgentKey(t.api, hirer.id);
  workerKey = await createAgentKey(t.api, worker.id);
});
afterAll(async () => { await t?.stop(); });

describe('llms texts', () => {
  it('lists every built-in adapter type with a link to its own text', async () => {
    const res = await t.api.get('/api/llms/agent-configuration.txt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    for (const type of BUILT_IN_ADAPTER_TYPES) {
      expect(res.text).toContain(`- \`${type}\`: `);
      expect(res.text).toContain(`/api/llms/agent-configuration/${type}.txt`);
    }
    expect(res.text).toContain('secret_ref');
  });

  it('documents every built-in adapter type, and only those', () => {
    expect(ADAPTER_CATALOG.map((entry) => entry.type).sort()).toEqual([...BUILT_IN_ADAPTER_TYPES].sort());
  });

  it("answers one adapter's fields, defaults and a JSON example that creates an agent as written", async () => {
    const res = await t.api.get('/api/llms/agent-configuration/process.txt');
    expect(res.status).toBe(200);
    expect(res.text).toContain('# Adapter `process`');
    expect(res.text).toContain('- `command` (string, required)');
    expect(res.text).toContain('- `graceSec` (integer, optional, default 15)');
    expect(res.text).toContain('SERVICE_API_KEY');
    const example = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(res.text)![1]);
    const created = await t.api.post(`/api/companies/${companyId}/agents`, example);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ adapterType: 'process', adapterConfig: { command: 'node', args: ['agent.js'] } });

    const gateway = await t.api.get('/api/llms/agent-configuration/eta_gateway.txt');
    expect(gateway.text).toContain('- `timeoutSec` (integer, optional, default 600)');
    expect(gateway.text).toContain('- `sessionKeyStrategy` (string, optional, default issue)');
  });

  it('answers the same table as JSON, with the local tools\' real fields and their accepted effort values', async () => {
    const res = await t.api.get('/api/llms/agent-configuration.json');
    expect(res.status).toBe(200);
    expect(res.body.adapterTypes.map((entry: any) => entry.type)).toEqual(ADAPTER_CATALOG.map((entry) => entry.type));
    const claude = res.body.adapterTypes.find((entry: any) => entry.type === 'alpha_local');
    expect(claude.summary).toContain('Claude Code');
    expect(claude.summary).toContain('npm install -g @anthropic-ai/claude-code');
    expect(claude.fields.map((field: any) => field.name)).toEqual(['command', 'cwd', 'model', 'effort', 'maxTurns', 'instructionsFilePath', 'modelProvider', 'extraArgs', 'toolSandbox', 'timeoutSec', 'graceSec', 'env']);
    expect(claude.fields.find((field: any) => field.name === 'effort').values).toContain('high');
    // Gemini CLI has no effort setting; Codex has no max turns.
    const names = (type: string) => res.body.adapterTypes.find((entry: any) => entry.type === type).fields.map((field: any) => field.name);
    expect(names('gamma_local')).not.toContain('effort');
    expect(names('beta_local')).not.toContain('maxTurns');
    const text = await t.api.get('/api/llms/agent-configuration/alpha_local.txt');
    expect(text.text).toMatch(/- `effort` \(string, optional, one of low, medium, high/);
    expect(text.text).toContain('- `command` (string, optional, default claude)');
    expect((await t.api.as(workerKey).get('/api/llms/agent-configuration.json')).status).toBe(403);
  });

  it('answers 404 for an adapter type it does not know', async () => {
    const res = await t.api.get('/api/llms/agent-configuration/nonsense.txt');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'Unknown adapter type: nonsense', code: 'not_found' });
  });

  it('lists icon names', async () => {
    const res = await t.api.get('/api/llms/agent-icons.txt');
    expect(res.status).toBe(200);
    expect(res.text).toContain('- bot\n');
    expect(res.text).toContain('`icon`');
  });

  it('serves agents allowed to create agents, and refuses the others with 403', async () => {
    for (const path of ['/api/llms/agent-configuration.txt', '/api/llms/agent-configuration/http.txt', '/api/llms/agent-icons.txt']) {
      expect((await t.api.as(hirerKey).get(path)).status, path).toBe(200);
      const denied = await t.api.as(workerKey).get(path);
      expect(denied.status, path).toBe(403);
      expect(denied.body).toMatchObject({ code: 'permission_denied', details: { permission: 'agents:create' } });
    }
  });

  it('counts an agents:create grant like the canCreateAgents flag', async () => {
    const agent = await createAgent(t.api, companyId, { name: 'Granted' });
    const key = await createAgentKey(t.api, agent.id);
    expect((await t.api.as(key).get('/api/llms/agent-icons.txt')).status).toBe(403);
    const grant = await t.api.put(`/api/companies/${companyId}/permission-grants`, { principalType: 'agent', principalId: agent.id, permissionKey: 'agents:create' });
    expect(grant.status).toBe(201);
    expect((await t.api.as(key).get('/api/llms/agent-icons.txt')).status).toBe(200);
  });
});
