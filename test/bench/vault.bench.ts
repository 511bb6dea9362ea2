import { AgentJwt } from '../../kernel/auth/agent-jwt.ts';
import { Database } from '../../kernel/db/database.ts';
import { createLogger } from '../../kernel/logger.ts';
import { Keyring } from '../../kernel/vault/keyring.ts';
import { resolveRunEnvironment } from '../../kernel/vault/run-environment.ts';
import { Vault } from '../../kernel/vault/vault.ts';
import { startKernelProcess } from './support/kernel-process.ts';
import { load, printTable } from './support/load.ts';

/**
 * The vault's costs, in one run:
 * - resolving an agent configuration with 10 secret references into a run environment,
 *   against resolving one with 10 plain values (the same work without decryption);
 * - a run-bound secret value read (decrypt + audit trail + activity, one write transaction)
 *   next to an ordinary authenticated GET with the same run token.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess();
  try {
    const post = (path: string, body: unknown) => kernel.call('POST', path, body);
    const company = await post('/api/companies', { name: 'Vault Bench' });
    const refs: Record<string, unknown> = {};
    const plain: Record<string, unknown> = {};
    for (let i = 0; i < 10; i++) {
      const secret = await post(`/api/companies/${company.id}/secrets`, { name: `SECRET_${i}`, value: `value-${i}-${'x'.repeat(40)}` });
      refs[`SECRET_${i}`] = { type: 'secret_ref', secretId: secret.id, version: 'latest' };
      plain[`PLAIN_${i}`] = `value-${i}-${'x'.repeat(40)}`;
    }
    const withRefs = await post(`/api/companies/${company.id}/agents`, { name: 'Refs', adapterConfig: { env: refs } });
    const withPlain = await post(`/api/companies/${company.id}/agents`, { name: 'Plain', adapterConfig: { env: plain } });
    await post(`/api/agents/${withRefs.id}/secret-grants`, { secretId: (refs.SECRET_0 as { secretId: string }).secretId, key: 'API_KEY', delivery: 'api' });

    // Resolution runs in this process against the kernel's database, as the runtime would.
    const pool = await kernel.sql();
    const db = await Database.connect(await kernel.databaseUrl(), { poolSize: 10 });
    const vault = new Vault(await Keyring.open(kernel.dataDir), createLogger('warn'));
    const rows = await db.query('select id, company_id, adapter_config from agents where id in (?, ?)', [withRefs.id, withPlain.id]);
    const refsRow = rows.find((r) => r.id === withRefs.id)!;
    const plainRow = rows.find((r) => r.id === withPlain.id)!;
    const measure = async (row: Record<string, any>, seconds: number) => {
      const until = performance.now() + seconds * 1000;
      let count = 0;
      await Promise.all(Array.from({ length: 10 }, async () => {
        while (performance.now() < until) { await resolveRunEnvironment(db, vault, row as any); count++; }
      }));
      return Math.round(count / seconds);
    };
    await measure(refsRow, 1);
    const refsRate = await measure(refsRow, 4);
    const plainRate = await measure(plainRow, 4);
    printTable('run-environment resolutions per second (10 concurrent)', [
      { configuration: '10 plain env values', 'resolutions/s': plainRate, ratio: '100%' },
      { configuration: '10 secret references (latest)', 'resolutions/s': refsRate, ratio: `${((refsRate / plainRate) * 100).toFixed(0)}%` },
    ]);

    // A live run for the agent, opened the way the run ledger does, and its token.
    const run = (await pool.query("insert into runs (company_id, agent_id, status, invocation_source) values ($1, $2, 'running', 'on_demand') returning id", [company.id, withRefs.id])).rows[0];
    const jwt = await AgentJwt.load(kernel.dataDir, undefined);
    const token = await jwt.sign({ agentId: withRefs.id, companyId: company.id, adapterType: 'process', runId: run.id });
    const headers = { authorization: `Bearer ${token}` };
    await load('warm-up', `${kernel.url}/api/agents/me/secrets`, { headers, seconds: 1 });
    const list = await load('GET /api/agents/me/secrets', `${kernel.url}/api/agents/me/secrets`, { headers, seconds: 4 });
    const read = await load('POST .../secrets/API_KEY/value', `${kernel.url}/api/agents/me/secrets/API_KEY/value`, { headers, method: 'POST', seconds: 4 });
    const ordinary = await load('GET /api/companies/{id}', `${kernel.url}/api/companies/${company.id}`, { headers, seconds: 4 });
    printTable('run-bound reads vs an ordinary authenticated GET (same run token, 10 connections)', [ordinary, list, read].map((r) => ({
      route: r.name, 'req/s': r.requestsPerSecond, 'vs ordinary GET': `${((r.requestsPerSecond / ordinary.requestsPerSecond) * 100).toFixed(0)}%`, 'p99 ms': r.p99Ms, errors: r.errors + r.non2xx,
    })));
    await db.close();
  } finally {
    await kernel.stop();
  }
}
