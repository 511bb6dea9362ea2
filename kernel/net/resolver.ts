import { lookup as dnsLookup } from 'node:dns/promises';
import type { ResolvedAddress } from './http-exchange.ts';

/** Resolves a host name to every address it has; tests pass their own to pin names to addresses. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, order: 'verbatim' })).map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
