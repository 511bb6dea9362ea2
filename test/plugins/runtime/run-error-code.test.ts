import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, wakeOk } from './helpers.ts';

/**
 * A heartbeat run that ended with its execution answers the execution's error code, read from
 * the execution (plugins/runtime/README.md, "Where a run's facts live"): the runtime's row keeps
 * no copy. A run the runtime cancelled first keeps its own cancel reason and no error code.
 */
let t: TestKernel;
let company: any;
let scripts: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Error Code Co'));
});
afterAll(async () => { await t?.stop(); });

const stored = async (runId: string) =>
  (await t.sql.query('select r.error_code as run, e.error_code as execution from plugin_runtime.runs r join executions e on e.id = r.execution_id where r.id = $1', [runId])).rows[0];

describe('the error code of a heartbeat run', () => {
  it('is the execution\'s for a run that ended with it, kept there alone', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), { timeoutSec: 1 });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'timed_out', errorCode: 'timeout', cancelReason: null });
    expect(await stored(run.id)).toEqual({ run: null, execution: 'timeout' });
    expect((await t.api.get(`/api/heartbeat-runs/${run.id}`)).body.errorCode).toBe('timeout');
  });

  it('stays null for a run the runtime cancelled first, whose execution ended with the cancel', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
    const { run: queued } = await wakeOk(t.api, agent.id);
    await runWhen(t, queued.id, (run) => run.status === 'running' && run.pid !== null);
    expect((await t.api.post(`/api/heartbeat-runs/${queued.id}/cancel`)).status).toBe(200);
    const ended = await runWhen(t, queued.id);
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'cancelled_by_request', errorCode: null });
    expect(await stored(queued.id)).toMatchObject({ run: null, execution: expect.any(String) });
  });
});
