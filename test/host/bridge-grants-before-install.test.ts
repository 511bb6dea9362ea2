import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installBridgeFunctions } from '../../kernel/db/bridge-functions.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * A bridge function that only a capability folder defines (no migration makes it) exists once
 * the folders are installed at the latest migration. A database restored at an earlier
 * version's state (npm run db:restore) has none yet, and its plugins are provisioned there:
 * their grant of such a function waits for the start that installs it, rather than failing
 * the restore; meanwhile the plugin's role cannot execute it.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/kernel-rows', import.meta.url));
const MISSING = 'keel_bridge.monthly_budgets(jsonb)';
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(() => t?.stop());

/** This instance's runtime role of the plugin (roles are the cluster's: other databases' instances have their own of the same key). */
const roleOf = (key: string) => t.kernel.host.databases.roles({ key }).runtime;
const executable = async (role: string) => (await t.sql.query('select has_function_privilege($1, $2, $3) as ok', [role, MISSING, 'execute'])).rows[0].ok as boolean;

describe('a capability\'s bridge function not installed yet', () => {
  it('does not stop a plugin from being provisioned, and is granted once installed', async () => {
    await t.sql.query(`drop function ${MISSING}`);
    await installAndEnable(t, FIXTURE, ['http.routes', 'database.namespace.write', 'database.namespace.migrate', 'activity.write', 'agents.pause', 'companies.pause', 'budgets.write']);
    expect((await t.api.get('/api/plugins/kernel-rows')).body.status).toBe('enabled');

    const client = new pg.Client({ connectionString: t.databaseUrl });
    await client.connect();
    try { expect(await installBridgeFunctions(client)).toContain('budgets-write/bridge.sql'); } finally { await client.end(); }
    const role = roleOf('kernel-rows');
    // Installed without EXECUTE for anyone: the plugin gets it when it is provisioned again, as
    // every process does when it activates the plugin (a start; here a disable and an enable).
    expect(await executable(role)).toBe(false);
    expect((await t.api.post('/api/plugins/kernel-rows/disable', {})).status).toBe(200);
    expect((await t.api.post('/api/plugins/kernel-rows/enable', {})).status).toBe(200);
    expect(await executable(role)).toBe(true);
  });
});
