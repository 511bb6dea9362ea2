import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/bench-plugin', import.meta.url));
const WARM_UP = 50;
const RUNS = 500;

/**
 * A plugin tool called over MCP (`POST /api/mcp`, the official SDK client over Streamable
 * HTTP, stateless: one POST per call) against the same tool through
 * `POST /api/plugins/tools/execute`, both as one agent with its API key, sequential round
 * trips in one kernel. The ratio is MCP's calls per second as a share of the direct route's
 * (goal: 80% or more).
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  let client: Client | undefined;
  try {
    const { call } = kernel;
    const company = await call('POST', '/api/companies', { name: 'MCP Bench' });
    const created = await call('POST', `/api/companies/${company.id}/agents`, { name: 'Bench agent', role: 'engineer' });
    const agent = created.agent ?? created;
    const { token } = await call('POST', `/api/agents/${agent.id}/keys`, { name: 'bench' });
    await call('POST', '/api/plugins/install', { localPath: FIXTURE });
    await call('POST', '/api/plugins/bench-plugin/enable', {});
    const headers = { authorization: `Bearer ${token}` };

    const execute = async () => {
      const res = await fetch(`${kernel.url}/api/plugins/tools/execute`, {
        method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ tool: 'bench-plugin.ping', input: {} }),
      });
      if (res.status !== 200) throw new Error(`tools/execute answered ${res.status}: ${await res.text()}`);
      await res.json();
    };
    client = new Client({ name: 'keel-bench', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${kernel.url}/api/mcp`), { requestInit: { headers } }));
    const viaMcp = async () => {
      const result = await client!.callTool({ name: 'bench-plugin.ping', arguments: {} });
      if (result.isError) throw new Error(`MCP tools/call failed: ${JSON.stringify(result.content)}`);
    };

    const directMs = await roundTrip(execute);
    const mcpMs = await roundTrip(viaMcp);
    // Measured twice, interleaved, so that a slower second half of the run does not favour either.
    const directAgainMs = await roundTrip(execute);
    const mcpAgainMs = await roundTrip(viaMcp);
    const direct = (directMs + directAgainMs) / 2;
    const mcp = (mcpMs + mcpAgainMs) / 2;
    printTable(`plugin tool round trip, sequential, ${RUNS * 2} calls each (agent API key)`, [
      { measure: 'POST /api/plugins/tools/execute', value: `${direct.toFixed(2)} ms` },
      { measure: 'MCP tools/call (POST /api/mcp, official SDK client)', value: `${mcp.toFixed(2)} ms` },
      { measure: 'MCP calls per second as a share of tools/execute (goal >= 80%)', value: `${((direct / mcp) * 100).toFixed(0)}%` },
    ]);
  } finally {
    await client?.close().catch(() => undefined);
    await kernel.stop();
  }
}

/** Mean milliseconds of one call, after a warm-up. */
async function roundTrip(once: () => Promise<void>): Promise<number> {
  for (let i = 0; i < WARM_UP; i++) await once();
  const started = performance.now();
  for (let i = 0; i < RUNS; i++) await once();
  return (performance.now() - started) / RUNS;
}
