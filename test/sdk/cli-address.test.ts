import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { resolveServerAddress } from '../../sdk/cli/server-address.ts';

/**
 * The CLI's copy of the server's address rules (it may not import the kernel) checked against
 * the kernel's own loadConfig on the same sources, so that the two cannot drift apart unseen.
 */
let dir: string;
let file: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'keel-address-'));
  file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify({ server: { host: '0.0.0.0', port: 3217 } }));
});
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

describe('the address the CLI contacts', () => {
  const cases: Array<{ name: string; flags: Record<string, string>; env: Record<string, string>; url: string; source: string }> = [
    { name: 'the data directory from KEEL_HOME', flags: {}, env: { KEEL_HOME: '<dir>' }, url: 'http://127.0.0.1:3217', source: 'host and port from <file>' },
    { name: 'the data directory from --data-dir', flags: { dataDir: '<dir>' }, env: {}, url: 'http://127.0.0.1:3217', source: 'host and port from <file>' },
    { name: 'the config file from KEEL_CONFIG', flags: {}, env: { KEEL_CONFIG: '<file>' }, url: 'http://127.0.0.1:3217', source: 'host and port from <file>' },
    { name: 'the config file from --config', flags: { config: '<file>' }, env: {}, url: 'http://127.0.0.1:3217', source: 'host and port from <file>' },
    { name: 'PORT over the file', flags: { dataDir: '<dir>' }, env: { PORT: '3300' }, url: 'http://127.0.0.1:3300', source: 'port from PORT, host from <file>' },
    { name: '--port over PORT', flags: { dataDir: '<dir>', port: '3400' }, env: { PORT: '3300' }, url: 'http://127.0.0.1:3400', source: 'port from --port, host from <file>' },
    { name: 'HOST over the file, and :: on loopback', flags: { dataDir: '<dir>' }, env: { HOST: '::' }, url: 'http://[::1]:3217', source: 'port from <file>, host from HOST' },
    { name: '--host over HOST', flags: { dataDir: '<dir>', host: 'localhost' }, env: { HOST: '10.0.0.1' }, url: 'http://localhost:3217', source: 'port from <file>, host from --host' },
  ];
  for (const c of cases) {
    it(`follows the server: ${c.name}`, () => {
      const fill = (value: string) => value.replace('<dir>', dir).replace('<file>', file);
      const flags = Object.fromEntries(Object.entries(c.flags).map(([k, v]) => [k, fill(v)]));
      const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, fill(v)]));
      const address = resolveServerAddress(flags, env);
      expect(address).toEqual({ url: c.url, source: fill(c.source) });
      // The kernel, given the same sources, listens where the CLI calls.
      const server = loadConfig({ env, flags }).server;
      const contacted = server.host === '0.0.0.0' ? '127.0.0.1' : server.host === '::' ? '[::1]' : server.host;
      expect(`http://${contacted}:${server.port}`).toBe(c.url);
    });
  }

  // On a machine whose ~/.keel has a config.json, the default is that file's and this case cannot be seen.
  it.skipIf(existsSync(join(homedir(), '.keel', 'config.json')))('defaults to 127.0.0.1:3100 and names the config file it did not find', () => {
    expect(resolveServerAddress({}, {})).toEqual({ url: 'http://127.0.0.1:3100', source: `the default address, as ${join(homedir(), '.keel', 'config.json')} does not exist` });
  });

  it('takes --api-base over everything, and KEEL_API_BASE unless a flag names the server', () => {
    const env = { KEEL_API_BASE: 'http://keel.internal:9000', PORT: '3300', KEEL_HOME: dir };
    expect(resolveServerAddress({ apiBase: 'http://elsewhere:1', port: '2' }, env)).toEqual({ url: 'http://elsewhere:1', source: 'address from --api-base' });
    expect(resolveServerAddress({}, env)).toEqual({ url: 'http://keel.internal:9000', source: 'address from KEEL_API_BASE' });
    expect(resolveServerAddress({ port: '3500' }, env).url).toBe('http://127.0.0.1:3500');
  });

  it("prefers the address a running server recorded in the data directory's lock, unless --host or --port say otherwise", async () => {
    const running = await mkdtemp(join(tmpdir(), 'keel-address-lock-'));
    try {
      await writeFile(join(running, 'config.json'), JSON.stringify({ server: { port: 0 } }));
      const lock = join(running, 'keel.lock');
      // This test's own process stands in for the server: alive, and the lock names no start time.
      await writeFile(lock, JSON.stringify({ pid: process.pid, startTime: null, startedAt: new Date().toISOString(), url: 'http://0.0.0.0:4567' }));
      expect(resolveServerAddress({ dataDir: running }, { PORT: '3300' })).toEqual({ url: 'http://127.0.0.1:4567', source: `address from the running server's ${lock}` });
      expect(resolveServerAddress({}, { KEEL_HOME: running }).url).toBe('http://127.0.0.1:4567');
      await writeFile(lock, JSON.stringify({ pid: process.pid, startTime: null, startedAt: '', url: 'http://[::]:4568' }));
      expect(resolveServerAddress({ dataDir: running }, {}).url).toBe('http://[::1]:4568');
      expect(resolveServerAddress({ dataDir: running, port: '4000' }, {}).url).toBe('http://127.0.0.1:4000');
      // A server still starting has no address yet; a lock whose process is gone is stale.
      await writeFile(lock, JSON.stringify({ pid: process.pid, startTime: null, startedAt: '', url: null }));
      expect(() => resolveServerAddress({ dataDir: running }, {})).toThrow(/port is 0 .*no server is running on/);
      await writeFile(lock, JSON.stringify({ pid: 99_999_999, startTime: null, startedAt: '', url: 'http://127.0.0.1:4567' }));
      expect(() => resolveServerAddress({ dataDir: running }, {})).toThrow(/port is 0/);
    } finally {
      await rm(running, { recursive: true, force: true });
    }
  });

  it('refuses what the server would refuse, naming the field, and a port the server picks at start', async () => {
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ server: { port: '3200' } }));
    expect(() => resolveServerAddress({ config: bad }, {})).toThrow(`server.port in ${bad} must be an integer between 0 and 65535, got "3200"`);
    expect(() => resolveServerAddress({ dataDir: dir }, { PORT: 'http' })).toThrow('PORT must be an integer between 0 and 65535, got "http"');
    await writeFile(bad, '{');
    expect(() => resolveServerAddress({ config: bad }, {})).toThrow(`Cannot read the server's address from ${bad}`);
    expect(() => resolveServerAddress({ port: '0' }, {})).toThrow(/port is 0 .*pass --api-base/);
  });
});
