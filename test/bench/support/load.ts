import autocannon from 'autocannon';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { stopChild } from './kernel-process.ts';

/** requestsPerSecond counts every answer, okPerSecond the 2xx ones only. */
export interface LoadResult { name: string; requestsPerSecond: number; okPerSecond: number; p99Ms: number; errors: number; non2xx: number }

export interface LoadOptions { headers?: Record<string, string>; seconds?: number; connections?: number; method?: string; body?: string }

/** Drives one route with autocannon (10 connections by default) and reports requests per second. */
export async function load(name: string, url: string, options: LoadOptions = {}): Promise<LoadResult> {
  const seconds = options.seconds ?? 5;
  const result = await autocannon({
    url,
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 10,
    duration: seconds,
  });
  return {
    name, requestsPerSecond: Math.round(result.requests.average), okPerSecond: Math.round(result['2xx'] / seconds),
    p99Ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx,
  };
}

/** A route `inTurns` drives: its options are asked for again each round (a body may change between rounds). */
export interface LoadCase { name: string; url: string; options: () => LoadOptions }

/**
 * Drives routes that are compared with each other in turns, round after round, `seconds` each
 * a round; each case's figure is its mean over the rounds (rates), its worst p99 and its summed
 * failures. A slow spell of the shared machine then falls on both sides of a ratio instead of
 * on whichever route it happened to meet: one run each swung a ratio by ten points.
 */
export async function inTurns(cases: readonly LoadCase[], rounds: number, seconds: number): Promise<LoadResult[]> {
  const runs = cases.map((): LoadResult[] => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, { name, url, options }] of cases.entries()) runs[index]!.push(await load(name, url, { ...options(), seconds }));
  }
  return cases.map(({ name }, index) => meanOf(name, runs[index]!));
}

function meanOf(name: string, results: LoadResult[]): LoadResult {
  const sum = (pick: (result: LoadResult) => number) => results.reduce((total, result) => total + pick(result), 0);
  return {
    name, requestsPerSecond: Math.round(sum((r) => r.requestsPerSecond) / results.length), okPerSecond: Math.round(sum((r) => r.okPerSecond) / results.length),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)), errors: sum((r) => r.errors), non2xx: sum((r) => r.non2xx),
  };
}

export async function startBareServer(body: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['test/bench/support/bare-http-server.ts'], { env: { ...process.env, BARE_BODY: body }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const match = /listening on (http:\/\/\S+)/.exec(chunk.toString());
      if (match) resolve(match[1]!);
    });
  });
  return { url, stop: () => stopChild(child) };
}

export function printTable(title: string, rows: Array<Record<string, string | number>>): void {
  console.log(`\n${title}`);
  console.table(rows);
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One GET over a kept-alive connection: the lightest client there is, so a latency is the server's (fetch spends about 1 ms more of the client's CPU per request on a 2-core machine). */
function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: keepAlive }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

/** p50 / p99 (ms) of `reads` sequential GETs after 10 unmeasured ones; any answer but 2xx fails the benchmark. */
export async function sequentialLatency(url: string, reads: number): Promise<string> {
  for (let i = 0; i < 10; i++) await get(url);
  const samples: number[] = [];
  for (let i = 0; i < reads; i++) {
    const started = performance.now();
    const status = await get(url);
    if (status < 200 || status > 299) throw new Error(`${url}: ${status}`);
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(1);
  return `${at(0.5)} / ${at(0.99)}`;
}
