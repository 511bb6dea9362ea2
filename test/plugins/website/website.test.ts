import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable } from '../../support/plugins.ts';

const ECHO = fileURLToPath(new URL('../../host/fixtures/echo', import.meta.url));
let t: TestKernel;
let n = 0;
/** A fresh address per call: tests must not count against each other's per-address limits. */
const address = (tag = 'visitor') => `${tag}-${++n}-${Date.now()}@example.org`;

async function setLimits(limits: Record<string, number>): Promise<void> {
  const res = await t.api.post('/api/plugins/website/config', { config: { waitlist: { windowSeconds: 3600, ...limits } } });
  expect(res.status, res.text).toBe(200);
}

const storedCount = async (email: string) => (await t.sql.query('select count(*)::int as n from plugin_website.waitlist_entries where address_key = lower($1)', [email])).rows[0].n as number;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  // A plugin that contributes a tool, so that it is a connector.
  await installAndEnable(t, ECHO);
  await setLimits({ perAddress: 3, perClient: 1000 });
});
afterAll(async () => { await t?.stop(); });

describe('GET /llms.txt', () => {
  it('is a plain markdown overview generated from the enabled plugins, linking the OpenAPI document', async () => {
    const res = await t.api.get('/llms.txt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.text).toMatch(/^# Keel\n/);
    expect(res.text).toContain('(/api/openapi.json)');
    // What is installed: the work plugin's routes, the echo fixture's tool, the MCP endpoints.
    expect(res.text).toContain('`GET /api/issues/:issueId` (any)');
    expect(res.text).toContain('`echo.shout`: Upper-cases text');
    expect(res.text).toContain('`POST /api/mcp`');
    expect(res.text).toContain('`POST /mcp`');
    expect(res.text).toContain('(/product/connectors/echo.md)');
  });

  it('follows what is enabled: a disabled plugin is gone from it', async () => {
    expect((await t.api.post('/api/plugins/echo/disable')).status).toBe(200);
    try {
      const res = await t.api.get('/llms.txt');
      expect(res.text).not.toContain('echo.shout');
      expect(res.text).not.toContain('connectors/echo.md');
    } finally {
      expect((await t.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
    }
  });

  it('needs no credentials and refuses other methods', async () => {
    expect((await t.api.get('/llms.txt', { headers: { authorization: '' } })).status).toBe(200);
    const post = await t.api.post('/llms.txt', {});
    expect(post.status).toBe(405);
    expect(post.body.code).toBe('method_not_allowed');
  });
});

describe('GET /product/connectors.md and /product/connectors/{slug}.md', () => {
  it('lists one entry per connector: the built-in MCP endpoint and each plugin with tools', async () => {
    const res = await t.api.get('/product/connectors.md');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(res.text).toMatch(/^# Connectors\n/);
    expect(res.text).toContain('](/product/connectors/keel.md)');
    expect(res.text).toContain('](/product/connectors/echo.md)');
    // Plugins without tools are no connectors.
    expect(res.text).not.toContain('/product/connectors/costs.md');
    expect(res.text).not.toContain('/product/connectors/website.md');
  });

  it("a plugin's page has its overview, set-up and its scoped tool list with input schemas", async () => {
    const res = await t.api.get('/product/connectors/echo.md');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(res.text).toMatch(/^# Echo fixture\n/);
    for (const heading of ['## Overview', '## Set-up', '## Tools']) expect(res.text).toContain(heading);
    expect(res.text).toContain('### `echo.shout`');
    expect(res.text).toContain('"required": [\n    "text"\n  ]');
    expect(res.text).toContain('`/api/mcp`');
    expect(res.text).not.toContain('`me`');
  });

  it('the built-in connector lists the core work tools', async () => {
    const res = await t.api.get('/product/connectors/keel.md');
    expect(res.status).toBe(200);
    for (const tool of ['me', 'inbox', 'issue_get', 'issue_update', 'issue_checkout', 'issue_release', 'comment_add', 'document_put']) expect(res.text).toContain(`### \`${tool}\``);
    expect(res.text).not.toContain('echo.shout');
  });

  it('an unknown connector, or a page not ending in .md, is a 404 with the JSON error body', async () => {
    for (const path of ['/product/connectors/nothing.md', '/product/connectors/echo', '/product/connectors/echo.txt', '/product/connectors/.md']) {
      const res = await t.api.get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body.code).toBe('connector_not_found');
    }
  });
});

describe('POST /api/waitlist/', () => {
  it('stores an address once, case-insensitively, answering 202 either way', async () => {
    const email = address('Ann');
    const first = await t.api.post('/api/waitlist/', { email });
    expect(first.status, first.text).toBe(202);
    expect(first.body).toEqual({ accepted: true });
    const again = await t.api.post('/api/waitlist/', { email: email.toUpperCase() });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(await storedCount(email)).toBe(1);
    const row = (await t.sql.query('select address from plugin_website.waitlist_entries where address_key = lower($1)', [email])).rows[0];
    expect(row.address).toBe(email);
  });

  it('is served without the trailing slash too, and needs no credentials', async () => {
    const email = address();
    expect((await t.api.post('/api/waitlist', { email }, { headers: { authorization: '' } })).status).toBe(202);
    expect(await storedCount(email)).toBe(1);
  });

  it('refuses a missing, non-string, malformed or overlong address with 400 and stores nothing', async () => {
    const before = (await t.sql.query('select count(*)::int as n from plugin_website.waitlist_entries')).rows[0].n;
    const bad: unknown[] = [{}, { email: '' }, { email: 42 }, { email: null }, { email: 'not-an-email' }, { email: 'a@' }, { email: '@b.org' },
      { email: `${'a'.repeat(250)}@example.org` }, { email: 'two@@example.org' }, { email: ' spaced@example.org' }, [], 'text'];
    for (const body of bad) {
      const res = await t.api.post('/api/waitlist/', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(typeof res.body.error).toBe('string');
    }
    const broken = await t.api.request('POST', '/api/waitlist/', { rawBody: '{"email":', headers: { 'content-type': 'application/json' } });
    expect(broken.status).toBe(400);
    expect((await t.sql.query('select count(*)::int as n from plugin_website.waitlist_entries')).rows[0].n).toBe(before);
  });

  it('limits requests per address (any case) with 429 and the JSON error body', async () => {
    const email = address('limited');
    for (let i = 0; i < 3; i++) expect((await t.api.post('/api/waitlist/', { email: i % 2 ? email.toUpperCase() : email })).status).toBe(202);
    const refused = await t.api.post('/api/waitlist/', { email });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(refused.body.details.scope).toBe('address');
    expect(refused.body.details.retryAfterSeconds).toBeGreaterThan(0);
    // Another address is not limited by it.
    expect((await t.api.post('/api/waitlist/', { email: address() })).status).toBe(202);
  });

  it('limits requests per client, whatever the addresses', async () => {
    await setLimits({ perAddress: 3, perClient: 4 });
    try {
      // The client's count so far in this window already includes the earlier tests' requests.
      let status = 202;
      for (let i = 0; i < 40 && status === 202; i++) status = (await t.api.post('/api/waitlist/', { email: address('client') })).status;
      expect(status).toBe(429);
      const refused = await t.api.post('/api/waitlist/', { email: address('client') });
      expect(refused.status).toBe(429);
      expect(refused.body.details.scope).toBe('client');
    } finally {
      await setLimits({ perAddress: 3, perClient: 1000 });
    }
    expect((await t.api.post('/api/waitlist/', { email: address() })).status).toBe(202);
  });

  it('counts in the database: a second Keel process on the same database sees the same limit', async () => {
    let peer: PeerKernel | undefined;
    try {
      peer = await startPeerKernel(t);
      const email = address('shared');
      expect((await t.api.post('/api/waitlist/', { email })).status).toBe(202);
      expect((await peer.api.post('/api/waitlist/', { email })).status).toBe(202);
      expect((await t.api.post('/api/waitlist/', { email })).status).toBe(202);
      const refused = await peer.api.post('/api/waitlist/', { email });
      expect(refused.status).toBe(429);
      expect(refused.body.details.scope).toBe('address');
      expect(await storedCount(email)).toBe(1);
    } finally {
      await peer?.stop();
    }
  });
});
