import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import type { RunServer } from '../../fixtures/run-server.ts';
import { runWhen, wakeOk } from '../runtime/helpers.ts';
import { logOf, remoteAgent, startRemoteWorld } from './helpers.ts';

/**
 * A run server of the reference kind (issue 26, point 9): runs named `run_id`, events named in
 * their data, text in `message.delta`, snake_case usage on `run.completed` and the status
 * (test/fixtures/run-server-reference.ts). Its usage becomes cost events and its text the result.
 */
let t: TestKernel;
let company: any;
let server: RunServer;

beforeAll(async () => {
  ({ t, company, server } = await startRemoteWorld('Reference Runs Co'));
});
afterAll(async () => {
  await t?.stop();
  await server?.stop();
});

async function costsOf(runId: string) {
  const { rows } = await t.sql.query(
    `select coalesce(sum(input_tokens), 0)::int as input, coalesce(sum(cached_input_tokens), 0)::int as cached, coalesce(sum(output_tokens), 0)::int as output,
            coalesce(sum(cost_cents), 0)::int as cents, count(*)::int as events
       from plugin_costs.cost_events where heartbeat_run_id = $1`, [runId]);
  return rows[0];
}

describe('a run server speaking the reference vocabulary', () => {
  it('its snake_case usage becomes cost events (input without the cached part) and its message deltas the result', async () => {
    server.reset({}, { steps: ['Ref', 'erence', ' reply'], costUsdPerStep: 0.05, reference: {} });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id, { reason: 'reference work' })).run.id);
    // 3 steps: input_tokens 300 of which cached_input_tokens 120, output_tokens 21, cost_usd 0.15.
    expect(run, JSON.stringify(run)).toMatchObject({
      status: 'succeeded', resultJson: { text: 'Reference reply' },
      usageJson: { inputTokens: 180, cachedInputTokens: 120, outputTokens: 21, costCents: 15, rejectedReports: 0 },
    });
    expect(await costsOf(run.id)).toMatchObject({ input: 180, cached: 120, output: 21, cents: 15, events: 1 });
    // The create was answered with `run_id` (202), and the events carried their names in their data.
    expect(server.runFor(run.id)).toBeDefined();
    const log = await logOf(t, run.id);
    expect(log).toContain('message.delta');
    expect(log).toContain('remote run remote-');
    // It ended on its terminal event (named in its data, without a status): no reconnect, no poll.
    expect(log).not.toMatch(/reconnecting|polling/);
    // The text kept for the result goes with the run.
    expect((await t.sql.query('select count(*)::int as n from plugin_remote_runner.metered where run_id = $1', [run.id])).rows[0].n).toBe(0);
  });

  it('cache_read_input_tokens is beside input_tokens; cost_cents, provider, model and billing_type are read', async () => {
    const usage = { input_tokens: 50, cache_read_input_tokens: 200, output_tokens: 9, total_tokens: 259, cost_cents: 4, provider: 'anthropic', model: 'claude-ref', billing_type: 'metered_api' };
    server.reset({}, { steps: ['cached'], reference: { usage } });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'succeeded', usageJson: { inputTokens: 50, cachedInputTokens: 200, outputTokens: 9, costCents: 4 } });
    const { rows } = await t.sql.query('select provider, model, billing_type from plugin_costs.cost_events where heartbeat_run_id = $1', [run.id]);
    expect(rows).toEqual([{ provider: 'anthropic', model: 'claude-ref', billing_type: 'metered_api' }]);
  });

  it('the final text the run server reports (`output`) is the result rather than the deltas', async () => {
    server.reset({}, { steps: ['thinking', ' aloud'], reference: { output: 'The final answer' } });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'succeeded', resultJson: { text: 'The final answer' } });
  });

  it('a run that mixes both vocabularies (camelCase run.usage, then snake_case run.completed) is not counted twice', async () => {
    server.reset({}, { steps: ['one', ' two', ' three', ' four'], costUsdPerStep: 0.02, reference: { keelUsageEvents: true, deltaField: 'text' } });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    // Each report is a running total of the same run: 4 steps of 60 uncached + 40 cached input, 7 output, 2 cents.
    expect(run, JSON.stringify(run)).toMatchObject({
      status: 'succeeded', resultJson: { text: 'one two three four' },
      usageJson: { inputTokens: 240, cachedInputTokens: 160, outputTokens: 28, costCents: 8, rejectedReports: 0 },
    });
    expect(await costsOf(run.id)).toMatchObject({ input: 240, cached: 160, output: 28, cents: 8 });
  });

  it('malformed snake_case reports meter nothing and hold back nothing after them', async () => {
    const malformedUsage = [
      { input_tokens: 500, cached_input_tokens: 900, output_tokens: 99_999 },
      { input_tokens: -1, output_tokens: 88_888 },
      { input_tokens: 'many', output_tokens: 77_777 },
      { output_tokens: 66_666, cost_usd: -1 },
      { output_tokens: 55_555, cost_cents: 1e12 },
      { output_tokens: 44_444, model: 'm'.repeat(300) },
      { output_tokens: 1e13 },
      { output_tokens: 33_333, cost_usd: 'lots' },
    ];
    server.reset({}, { steps: ['still', ' here'], costUsdPerStep: 0.03, reference: { malformedUsage } });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run, JSON.stringify(run)).toMatchObject({
      status: 'succeeded', resultJson: { text: 'still here' },
      usageJson: { inputTokens: 120, cachedInputTokens: 80, outputTokens: 14, costCents: 6, rejectedReports: 0 },
    });
    expect(await costsOf(run.id)).toMatchObject({ input: 120, cached: 80, output: 14, cents: 6, events: 1 });
    // Relayed to the log as they came.
    const log = await logOf(t, run.id);
    for (const marker of ['99999', '88888', '77777', '66666', '55555', '44444', '33333']) expect(log).toContain(marker);
  });

  it('the text kept as the result is bounded to 64 KiB of UTF-8 and says it was cut', async () => {
    server.reset({}, { steps: ['ü'.repeat(12_000), 'ü'.repeat(12_000), 'ü'.repeat(12_000)], reference: {} });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status).toBe('succeeded');
    expect(run.resultJson.truncated).toBe(true);
    // Two bytes each: 64 KiB is 32,768 of them.
    expect(run.resultJson.text).toBe('ü'.repeat(32_768));
  });

  it('a failed reference run fails remote_run_failed, and its streamed text is not taken as a result', async () => {
    server.reset({}, { steps: ['partial'], end: 'failed', reference: {} });
    const agent = await remoteAgent(t.api, company.id, server);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'remote_run_failed' });
    expect(JSON.stringify(run.resultJson ?? null)).not.toContain('partial');
  });
});
