import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '@keel/sdk/testing';

let host: TestHost;
let rows: Array<{ id: string; beat_at: string; invocation_id: string }> = [];

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url), { config: { keep: 3 } });
  host.db.on(/^insert into heartbeats/, ([invocationId]) => {
    const row = { id: String(rows.length ? Number(rows.at(-1)!.id) + 1 : 1), beat_at: `2030-01-01T00:0${rows.length}:00.000Z`, invocation_id: String(invocationId) };
    rows.push(row);
    return [{ id: row.id, beat_at: row.beat_at }];
  });
  host.db.on(/^delete from heartbeats where id <= \$1/, ([upTo]) => {
    const before = rows.length;
    rows = rows.filter((row) => Number(row.id) > Number(upTo));
    return { rows: [], rowCount: before - rows.length };
  });
  host.db.on(/^select id, beat_at, invocation_id, count\(\*\) over \(\) as total from heartbeats/, () => [...rows].reverse().slice(0, 6).map((row) => ({ ...row, total: String(rows.length) })));
});
afterAll(() => host?.dispose());

describe('scheduled-heartbeat (sdk/testing)', () => {
  it('shows no heartbeat before the job ran', async () => {
    expect((await host.callRoute('status')).body).toEqual({ count: 0, latest: null, previous: [] });
  });

  it('writes a heartbeat row per run, as the scheduler, stamped with the run\'s invocation', async () => {
    const result = await host.runJob('beat') as { id: number; trimmed: number };
    expect(result).toEqual({ id: 1, beatAt: '2030-01-01T00:00:00.000Z', trimmed: 0 });
    const insert = host.db.queries.find((q) => q.sql.startsWith('insert'))!;
    expect(rows[0]!.invocation_id).toBe(insert.params[0]);
    expect(host.db.queries.filter((q) => q.invocationId === insert.invocationId)).toHaveLength(2);
  });

  it('keeps only the configured number of rows', async () => {
    for (let i = 0; i < 4; i++) await host.runJob('beat');
    expect(rows.map((row) => row.id)).toEqual(['3', '4', '5']);
    const status = (await host.callRoute('status')).body as { count: number; latest: { id: number }; previous: Array<{ id: number }> };
    expect(status.count).toBe(3);
    expect(status.latest.id).toBe(5);
    expect(status.previous.map((beat) => beat.id)).toEqual([4, 3]);
  });

  it('is not scheduled without the jobs.schedule grant', async () => {
    const unscheduled = await createTestHost(new URL('.', import.meta.url), { grants: ['database.namespace.write', 'http.routes'] });
    try {
      await expect(unscheduled.runJob('beat')).rejects.toMatchObject({ status: 404, code: 'job_not_found' });
    } finally {
      unscheduled.dispose();
    }
  });
});
