import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { runCli } from './cli-support.ts';

/**
 * `keel agent test <agent>` against a running kernel: the environment test of an agent whose
 * adapter a plugin contributes (a fixture whose test really probes the agent's command as the
 * agent user, and checks for a credential in its env), printed check by check with the fix of a
 * failed one, exit 1 while a check fails and 0 once none does; an adapter without a test is the
 * API's refusal.
 */
const FIXTURE = fileURLToPath(new URL('../console/fixtures/transcript-tool', import.meta.url));
let t: TestKernel;
let company: any;

const keel = (...args: string[]) => runCli([...args, '--api-base', t.url]);

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Test Co' });
  await installAndEnable(t, FIXTURE);
});
afterAll(async () => { await t?.stop(); });

describe('keel agent test', { timeout: 120_000 }, () => {
  it('prints each check with its fix, and exits 1 until every check passes', async () => {
    const agent = await createAgent(t.api, company.id, { name: 'Coder', adapterType: 'console_local', adapterConfig: { command: process.execPath } });
    const failed = await keel('agent', 'test', 'coder', '-C', company.id);
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).toBe('');
    expect(failed.stdout.split('\n')).toEqual([
      `Environment of agent ${agent.id} (console_local ${process.version}): failed`,
      `  ok      version     the command answered ${process.version}`,
      '  failed  credential  no credential: FIXTURE_API_KEY is not in adapterConfig.env',
      '                      fix: Add FIXTURE_API_KEY to adapterConfig.env as a secret reference',
      '',
    ]);
    const json = await keel('agent', 'test', agent.id, '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      ok: false, adapterType: 'console_local', version: process.version, checks: [
        { name: 'version', ok: true, message: `the command answered ${process.version}`, fix: null },
        { name: 'credential', ok: false, message: 'no credential: FIXTURE_API_KEY is not in adapterConfig.env', fix: 'Add FIXTURE_API_KEY to adapterConfig.env as a secret reference' },
      ],
    });

    const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'fixture-key', value: 'kept-in-the-vault' });
    expect(secret.status, secret.text).toBe(201);
    const patched = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { env: { FIXTURE_API_KEY: { type: 'secret_ref', secretId: secret.body.id, version: 'latest' } } } });
    expect(patched.status, patched.text).toBe(200);
    const passed = await keel('agent', 'test', agent.id);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stdout).toBe(`Environment of agent ${agent.id} (console_local ${process.version}): ok\n  ok      version     the command answered ${process.version}\n  ok      credential  FIXTURE_API_KEY is set\n`);
  });

  it("reports a missing command as a failed check whose fix installs it", async () => {
    const agent = await createAgent(t.api, company.id, { name: 'Missing', adapterType: 'console_local', adapterConfig: { command: '/nonexistent/fixture-tool' } });
    const result = await keel('agent', 'test', agent.id);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('  failed  version     the command did not answer a version');
    expect(result.stdout).toContain('fix: npm install -g fixture-tool');
  });

  it("answers the API's refusal for an adapter without an environment test", async () => {
    const agent = await createAgent(t.api, company.id, { name: 'Scripted', adapterType: 'process', adapterConfig: { command: process.execPath } });
    const result = await keel('agent', 'test', agent.id);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('Error: The adapter process has no environment test on this instance (adapter_test_not_supported, HTTP 422)\n');
  });
});
