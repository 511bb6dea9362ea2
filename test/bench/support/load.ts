import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { stopChild } from './kernel-process.ts';

export interface LoadResult { name: string; requestsPerSecond: number; p99Ms: number; errors: number; non2xx: number }

/** Drives one route with autocannon (10 connections by default) and reports requests per second. */
export async function load(name: string, url: string, options: { headers?: Record<string, string>; seconds?: number; connections?: number; method?: string; body?: string } = {}): Promise<LoadResult> {
  const result = await autocannon({
    url,
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 10,
    duration: options.seconds ?? 5,
  });
  return { name, requestsPerSecond: Math.round(result.requests.average), p99Ms: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
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
