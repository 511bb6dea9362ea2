import type { Logger } from 'pino';
import type { KeelConfig } from '../config/schema.ts';
import type { Database, Row } from '../db/database.ts';
import { checkConnectAddress } from './configured-addresses.ts';
import { assertUnderConfiguredUrl } from './http-runner.ts';
import { askToStop, type RemoteStopRecipe } from './remote-run.ts';
import type { SecretHeaders } from './execution-prepare.ts';

/**
 * The remote run of an execution marked lost is still running on its run server, which nobody
 * follows any more: it is asked to stop, as the dead process would have at its deadline. The
 * secrets are revealed again from the agent's configuration (audited like a start), and only
 * while the stop URL is still under the configured base URL and its address passes the same
 * checks (a changed configuration is not sent the key). Best effort, logged.
 */
export async function stopRemoteRun(executor: { secretHeadersFor: SecretHeaders; config: KeelConfig; db: Database; log: Logger }, row: Row): Promise<void> {
  const recipe = row.remote_stop as RemoteStopRecipe;
  try {
    const agent = await executor.db.maybeOne<Row>('select id, company_id, adapter_config from agents where id = ?', [row.agent_id]);
    if (!agent) return;
    const config = (agent.adapter_config ?? {}) as Record<string, unknown>;
    const url = assertUnderConfiguredUrl(recipe.url, config[recipe.baseUrlKey]);
    const addresses = await checkConnectAddress(url, executor.config, row.plugin);
    const secrets = await executor.secretHeadersFor({ plugin: row.plugin, companyId: row.company_id }, recipe.secretHeaders, row.run_id, agent, config);
    const status = await askToStop({ headers: { ...recipe.headers, ...secrets }, addresses }, url);
    executor.log.warn({ executionId: row.id, status }, status === null ? 'asked the run server to stop the remote run of a lost execution: no answer' : 'asked the run server to stop the remote run of a lost execution');
  } catch (error) {
    executor.log.warn({ err: error, executionId: row.id }, 'could not ask the run server to stop the remote run of a lost execution');
  }
}
