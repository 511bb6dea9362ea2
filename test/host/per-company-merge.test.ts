import { describe, expect, it } from 'vitest';
import { invokePerCompany, mergeAnswers } from '../../kernel/host/contributions/route-per-company.ts';

describe('merging the answers of a perCompany route', () => {
  it('concatenates arrays, merges objects, adds the declared sums and keeps anything else from the first answer', () => {
    const sum = new Set(['counts.found']);
    expect(mergeAnswers(
      { window: 24, dryRun: true, counts: { found: 2, other: 5 }, items: [1, 2] },
      { window: 24, dryRun: true, counts: { found: 3, other: 7 }, items: [3], extra: 'x' }, sum,
    )).toEqual({ window: 24, dryRun: true, counts: { found: 5, other: 5 }, items: [1, 2, 3], extra: 'x' });
  });

  it('calls once per company, each with its own company, or once with none', async () => {
    const seen: Array<string | null> = [];
    const invoke = async (companyId: string | null) => {
      seen.push(companyId);
      return { ok: true, value: JSON.stringify({ ids: companyId ? [companyId] : [], counts: { n: companyId ? 1 : 0 } }), activityWritten: false };
    };
    expect(JSON.parse((await invokePerCompany(['a', 'b'], ['counts.n'], invoke)).value!)).toEqual({ ids: ['a', 'b'], counts: { n: 2 } });
    expect(seen).toEqual(['a', 'b']);
    expect(JSON.parse((await invokePerCompany([], ['counts.n'], invoke)).value!)).toEqual({ ids: [], counts: { n: 0 } });
  });

  it('stops at the first failing company and answers its error', async () => {
    const seen: string[] = [];
    const result = await invokePerCompany(['a', 'b', 'c'], [], async (companyId) => {
      seen.push(companyId!);
      return companyId === 'b'
        ? { ok: false, error: { status: 409, code: 'conflict', message: 'no' }, activityWritten: false }
        : { ok: true, value: '{}', activityWritten: true };
    });
    expect(result.ok).toBe(false);
    expect(result.error?.code).toBe('conflict');
    expect(seen).toEqual(['a', 'b']);
  });

  it('refuses a respond() envelope: the host sets the status of the merged answer itself', async () => {
    await expect(invokePerCompany(['a'], [], async () => ({ ok: true, value: '{"$response":{"status":201,"body":{}}}', activityWritten: false })))
      .rejects.toMatchObject({ status: 502, code: 'plugin_invalid_response' });
  });
});
