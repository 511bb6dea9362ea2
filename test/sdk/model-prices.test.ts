import { describe, expect, it } from 'vitest';
import { callCents, exactCents, priceFor, type ModelPrice } from '../../sdk/shared/model-prices.ts';

const row = (model: string, input: number): ModelPrice => ({ model, inputCentsPerMTok: input, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 0 });

describe('priceFor', () => {
  const table = [row('*', 1), row('gpt-4o*', 2), row('gpt-4o-mini*', 3), row('gpt-4o-mini', 4)];
  it('prefers an exact entry, then the longest prefix', () => {
    expect(priceFor(table, 'gpt-4o-mini')?.inputCentsPerMTok).toBe(4);
    expect(priceFor(table, 'gpt-4o-mini-2024')?.inputCentsPerMTok).toBe(3);
    expect(priceFor(table, 'gpt-4o-2024')?.inputCentsPerMTok).toBe(2);
    expect(priceFor(table, 'claude')?.inputCentsPerMTok).toBe(1);
  });
  it('answers null when nothing matches, and a name is not a prefix without *', () => {
    expect(priceFor([row('gpt-4o', 1)], 'gpt-4o-mini')).toBeNull();
    expect(priceFor([], 'x')).toBeNull();
  });
});

describe('exactCents and callCents', () => {
  const rates = { inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 };
  it('prices each kind of token at its own rate, exactly', () => {
    const usage = { inputTokens: 1000, cachedInputTokens: 2000, cacheWriteTokens: 100, outputTokens: 500 };
    expect(exactCents(rates, usage)).toBeCloseTo(0.3 + 0.06 + 0.0375 + 0.75, 12);
  });
  it('rounds a call up to a whole cent, and 0 stays 0', () => {
    expect(callCents(rates, { inputTokens: 1, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })).toBe(1);
    expect(callCents(rates, { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })).toBe(0);
    expect(callCents(rates, { inputTokens: 1_000_000, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })).toBe(300);
    expect(callCents(rates, { inputTokens: 1_000_001, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })).toBe(301);
  });
  it('accepts fractional rates', () => {
    const half = { inputCentsPerMTok: 7.5, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 0 };
    expect(exactCents(half, { inputTokens: 2_000_000, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })).toBe(15);
    expect(callCents(half, { inputTokens: 2_000_000, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 })).toBe(15);
  });
});
