import { hashToken, mintToken, BOARD_KEY_PREFIX } from '../../kernel/auth/tokens.ts';
import { startKernelProcess } from './support/kernel-process.ts';
import { load, printTable, startBareServer, type LoadResult } from './support/load.ts';

/**
 * Authentication cost: GET /api/companies/{id} with no token (local_trusted), with a board
 * API key and with an agent API key, and GET /api/agents/me, against bare node:http answering
 * the same JSON, all in one run. Goal: an agent-key request holds >= 80% of the no-token rate.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess();
  try {
    const post = (path: string, body: unknown) => kernel.call('POST', path, body);
    const company = await post('/api/companies', { name: 'Bench Co' });
    const created = await post(`/api/companies/${company.id}/agents`, { name: 'Bench Agent', role: 'engineer' });
    const agent = created.agent ?? created;
    const agentKey = (await post(`/api/agents/${agent.id}/keys`, { name: 'bench' })).token as string;
    // Board keys are minted through the CLI challenge flow; the benchmark inserts one directly.
    const boardKey = mintToken(BOARD_KEY_PREFIX);
    await (await kernel.sql()).query('insert into board_api_keys (name, key_hash, key_prefix) values ($1, $2, $3)', ['bench', hashToken(boardKey), boardKey.slice(0, 16)]);

    const companyUrl = `${kernel.url}/api/companies/${company.id}`;
    const body = await (await fetch(companyUrl)).text();
    const bare = await startBareServer(body);
    try {
      const cases: Array<[string, string, Record<string, string>]> = [
        ['bare node:http', bare.url, {}],
        ['company, no token', companyUrl, {}],
        ['company, board key', companyUrl, { authorization: `Bearer ${boardKey}` }],
        ['company, agent key', companyUrl, { authorization: `Bearer ${agentKey}` }],
        ['agents/me, agent key', `${kernel.url}/api/agents/me`, { authorization: `Bearer ${agentKey}` }],
      ];
      for (const [name, url, headers] of cases) await load(`${name} (warm-up)`, url, { headers, seconds: 1 });
      const results: LoadResult[] = [];
      for (const [name, url, headers] of cases) results.push(await load(name, url, { headers, seconds: 5 }));
      const bareRate = results[0]!.requestsPerSecond;
      const noToken = results[1]!.requestsPerSecond;
      printTable('requests per second, 10 connections, loopback', results.map((r) => ({
        route: r.name,
        'req/s': r.requestsPerSecond,
        'vs bare node:http': `${((r.requestsPerSecond / bareRate) * 100).toFixed(0)}%`,
        'vs no token': `${((r.requestsPerSecond / noToken) * 100).toFixed(0)}%`,
        'p99 ms': r.p99Ms,
        errors: r.errors + r.non2xx,
      })));
    } finally {
      await bare.stop();
    }
  } finally {
    await kernel.stop();
  }
}
