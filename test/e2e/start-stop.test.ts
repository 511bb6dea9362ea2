import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The server as operators run it: `kernel/main.ts` in its own process on an embedded
 * PostgreSQL in a fresh data directory, stopped with SIGINT (Ctrl-C) and started again.
 */
let home: string;
beforeAll(async () => { home = await mkdtemp(join(tmpdir(), 'keel-e2e-')); });
afterAll(async () => { await rm(home, { recursive: true, force: true }); });

function start(args: string[] = []): { child: ChildProcess; output: () => string; listening: Promise<string> } {
  const child = spawn(process.execPath, ['--no-node-snapshot', 'kernel/main.ts', '--port', '0', ...args], {
    env: { ...process.env, KEEL_HOME: home, KEEL_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => { text += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { text += chunk.toString(); });
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) { clearInterval(timer); resolve(match[1]!); }
    }, 50);
    child.once('exit', (code) => { clearInterval(timer); reject(new Error(`exited with ${code}: ${text}`)); });
  });
  return { child, output: () => text, listening };
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGINT');
  });
}

describe('starting and stopping the server', () => {
  it('prints where it listens and where the data lives, stops cleanly on SIGINT and reuses the data', async () => {
    const first = start();
    const url = await first.listening;
    expect(first.output()).toMatch(/Keel is listening on http:\/\/127\.0\.0\.1:\d+ \(mode local_trusted, private exposure\)/);
    expect(first.output()).toContain(`Data directory: ${home}; database: embedded PostgreSQL in ${join(home, 'db')}`);
    expect((await fetch(`${url}/api/health`)).status).toBe(200);
    const created = await (await fetch(`${url}/api/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Persistent Co' }) })).json() as { id: string };
    expect(await stop(first.child)).toBe(0);
    // PostgreSQL stopped with the server: its pid file is gone.
    expect(existsSync(join(home, 'db', 'postmaster.pid'))).toBe(false);

    const second = start();
    const again = await second.listening;
    const company = await fetch(`${again}/api/companies/${created.id}`);
    expect(company.status).toBe(200);
    expect(((await company.json()) as { name: string }).name).toBe('Persistent Co');
    expect(await stop(second.child)).toBe(0);
  }, 120_000);

  it('refuses a configuration that exposes local_trusted publicly, naming the field', async () => {
    const bad = start(['--mode', 'local_trusted', '--exposure', 'public']);
    await expect(bad.listening).rejects.toThrow(/Invalid configuration: server\.exposure must be "private" when deploymentMode is "local_trusted"/);
    expect(bad.child.exitCode).not.toBe(0);
  });
});
