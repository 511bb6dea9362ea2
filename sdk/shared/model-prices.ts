/**
 * Model prices and what a metered call costs: pure functions the kernel (the running cost of a
 * proxied stream, the cut) and the model-gateway plugin (the price of a call) both use, so that
 * the cut and the recorded cost can never disagree.
 */

/** One row of a provider's price table, in cents per million tokens (fractions allowed: 7.5). */
export interface ModelPrice {
  /** An exact model name, or a prefix ending in `*` (`claude-sonnet-4*`). */
  model: string;
  inputCentsPerMTok: number;
  cachedInputCentsPerMTok: number;
  cacheWriteCentsPerMTok: number;
  outputCentsPerMTok: number;
}

export type PriceRates = Omit<ModelPrice, 'model'>;

/** Tokens of one call as the provider reported them (or as estimated while streaming). */
export interface MeteredUsage {
  /** Input tokens NOT read from the cache and not written to it. */
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  outputTokens: number;
}

export const ZERO_USAGE: Readonly<MeteredUsage> = Object.freeze({ inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0 });

/**
 * The price of `model`: an exact entry beats any prefix, and a longer prefix beats a shorter
 * one (`gpt-4o-mini*` over `gpt-4o*` over `*`). null when nothing matches.
 */
export function priceFor(table: readonly ModelPrice[], model: string): ModelPrice | null {
  let best: ModelPrice | null = null;
  let bestLength = -1;
  for (const entry of table) {
    if (entry.model === model) return entry;
    if (!entry.model.endsWith('*')) continue;
    const prefix = entry.model.slice(0, -1);
    if (model.startsWith(prefix) && prefix.length > bestLength) {
      best = entry;
      bestLength = prefix.length;
    }
  }
  return best;
}

/** Exact fractional cents of a usage at these rates (no rounding). */
export function exactCents(rates: PriceRates, usage: MeteredUsage): number {
  const perToken = (count: number, centsPerMTok: number) => (count * centsPerMTok) / 1_000_000;
  return perToken(usage.inputTokens, rates.inputCentsPerMTok)
    + perToken(usage.cachedInputTokens, rates.cachedInputCentsPerMTok)
    + perToken(usage.cacheWriteTokens, rates.cacheWriteCentsPerMTok)
    + perToken(usage.outputTokens, rates.outputCentsPerMTok);
}

/**
 * The whole cents a call is charged: its exact cost rounded UP per call, so that many small
 * calls cannot each round down to nothing and slip under a budget. 0 stays 0.
 */
export function callCents(rates: PriceRates, usage: MeteredUsage): number {
  const exact = exactCents(rates, usage);
  if (exact <= 0) return 0;
  // A float sum such as 0.1 + 0.2 lands a hair above a whole cent; do not charge a cent for that hair.
  const rounded = Math.round(exact);
  return Math.abs(exact - rounded) < 1e-9 ? rounded : Math.ceil(exact);
}
