import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { checkProxyUrl, proxyTargetVerdict } from '../../kernel/gateway/proxy-target.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'keel-llm-config-'));
const resolveTo = (address: string) => async () => [{ address, family: 4 as const }];

describe('llm.privateNetworkHosts', () => {
  it('is read from KEEL_LLM_PRIVATE_NETWORK_HOSTS, comma separated, and checked', () => {
    expect(loadConfig({ env: { KEEL_LLM_PRIVATE_NETWORK_HOSTS: '127.0.0.1, models.lan:8080' }, overrides: { dataDir } }).llm).toEqual({ privateNetworkHosts: ['127.0.0.1', 'models.lan:8080'] });
    expect(loadConfig({ env: {}, overrides: { dataDir } }).llm).toBeUndefined();
    expect(() => loadConfig({ env: { KEEL_LLM_PRIVATE_NETWORK_HOSTS: 'agent@host' }, overrides: { dataDir } })).toThrow();
  });

  it('opens a listed host (and port) to http and private addresses, nothing else', async () => {
    const config = loadConfig({ env: { KEEL_LLM_PRIVATE_NETWORK_HOSTS: '127.0.0.1,models.lan:8080' }, overrides: { dataDir } });
    expect(await proxyTargetVerdict('http://127.0.0.1:9999', config)).toEqual({ ok: true, reason: null });
    expect(await proxyTargetVerdict('http://models.lan:8080', config, resolveTo('10.0.0.5'))).toEqual({ ok: true, reason: null });
    expect((await proxyTargetVerdict('http://models.lan:8081', config, resolveTo('10.0.0.5'))).ok).toBe(false);
    expect((await proxyTargetVerdict('https://api.example.com', config, resolveTo('10.0.0.5'))).ok).toBe(false);
    expect(await proxyTargetVerdict('https://api.example.com', config, resolveTo('93.184.216.34'))).toEqual({ ok: true, reason: null });
    expect((await proxyTargetVerdict('http://api.example.com', config, resolveTo('93.184.216.34'))).ok).toBe(false);
    expect((await proxyTargetVerdict('https://169.254.169.254', loadConfig({ env: { KEEL_LLM_PRIVATE_NETWORK_HOSTS: '169.254.169.254' }, overrides: { dataDir } }))).ok).toBe(false);
    expect((await proxyTargetVerdict('https://127.0.0.1/v1?key=x', config)).ok).toBe(false);
    expect((await proxyTargetVerdict('https://user@127.0.0.1/v1', config)).ok).toBe(false);
    // Forwarding keeps the provider's query (Gemini's alt=sse); a base URL may not have one.
    await expect(checkProxyUrl('http://127.0.0.1:1/v1beta/models/m:streamGenerateContent?alt=sse', config, { allowQuery: true })).resolves.toMatchObject({ addresses: [{ address: '127.0.0.1' }] });
  });
});
