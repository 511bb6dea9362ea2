import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '../../sdk/testing/index.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/kernel-rows', import.meta.url));
const COMPANY = '00000000-0000-4000-8000-00000000000a';
let host: TestHost;
let inserted: unknown[][] = [];

beforeAll(async () => {
  host = await createTestHost(FIXTURE);
  host.db.on(/^insert into entries/, (params) => { inserted.push(params); return []; });
});
afterAll(() => host?.dispose());

const call = (amount: number, actor?: { type: 'user' | 'agent'; id: string; agentId: string | null }) => ({ params: { companyId: COMPANY }, body: { amount }, actor });

describe('sdk/testing batches', () => {
  it('answers a group of calls through the batch handler, each with its own answer, identity and activity', async () => {
    inserted = [];
    const before = host.activity.length;
    const agent = { type: 'agent' as const, id: 'agent-1', agentId: '00000000-0000-4000-8000-0000000000a1' };
    const answers = await host.callBatch('add', [call(1), call(13), call(2, agent)]);
    expect(answers.map((a) => [a.status, a.body])).toEqual([
      [201, { amount: 1, batched: true }],
      [422, { error: 'Thirteen is refused', code: 'unlucky' }],
      [201, { amount: 2, batched: true }],
    ]);
    // One set-based statement for the whole group.
    expect(inserted).toHaveLength(1);
    const recorded = host.activity.slice(before);
    expect(recorded.map((entry) => [entry.action, entry.entityId, entry.actor.type, (entry.details as { by: string }).by])).toEqual([
      ['entry.added', '1', 'user', 'user'],
      ['entry.added', '2', 'agent', 'agent'],
    ]);
  });

  it('falls back to one call at a time when the batch handler throws', async () => {
    inserted = [];
    const answers = await host.callBatch('add', [call(5), call(666), call(6)]);
    expect(answers.map((a) => [a.status, a.body])).toEqual([
      [201, { amount: 5, batched: false }],
      [422, { error: 'This one poisons batches', code: 'poison' }],
      [201, { amount: 6, batched: false }],
    ]);
    expect(inserted).toHaveLength(2);
  });

  it('refuses a route that is not batched', async () => {
    await expect(host.callBatch('rows', [{ params: { companyId: COMPANY }, body: { op: 'x' } }])).rejects.toThrow(/not batched/);
  });
});
