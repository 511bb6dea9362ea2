import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boardToken, createAgent, createCompany, insertUser } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';
import { UNKNOWN_UUID } from './bad-input-cases.ts';
import { eventsSettled } from '../support/events.ts';
import { changedTables, fingerprinter } from './fuzz/fingerprint.ts';
import { pool, rawClient, type RawAnswer } from './fuzz/http.ts';
import { Random } from './fuzz/random.ts';
import { fuzzRequest, type FuzzContext } from './fuzz/requests.ts';
import { classify, fillPath, mutatingRoutes, type FuzzRoute } from './fuzz/routes.ts';

/**
 * Fuzzes every mutating route of a running server, the kernel's and the enabled first-party
 * plugins' (found from the routers, so new routes are covered without touching this file),
 * in local_trusted mode and in authenticated mode with board and agent keys. Each request is
 * certainly invalid for its route (see fuzz/routes.ts and fuzz/requests.ts) and otherwise
 * random: wrong types, missing and extra fields, huge and deeply nested bodies, invalid JSON,
 * other content types, truncated bodies and forms, malformed tokens, traversal and malformed
 * percent-encoding in path parameters, NULs and lone surrogates, odd headers.
 *
 * Every answer must be a 4xx with the JSON error body, with no stack trace and no database
 * text; no table of the kernel or of a plugin may change; the server must serve normally
 * afterwards. The generator is seeded (FUZZ_SEED replays a run; FUZZ_REQUESTS sets the number
 * of requests per route in local_trusted mode).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_251_123);
const PER_ROUTE = Number(process.env.FUZZ_REQUESTS ?? 300);
const PER_ROUTE_AUTHENTICATED = Math.ceil(PER_ROUTE / 3);
const CONCURRENCY = 6;
const LIMIT = 64 * 1024;

/**
 * Routes that rightly succeed whatever they are sent, and write nothing then: they are fuzzed
 * all the same, with success allowed, but every other check applies.
 */
const LENIENT: Record<string, string> = {
  'POST /api/auth/sign-out': 'signing out without a live session is a successful no-op',
};

/**
 * Routes that speak JSON-RPC (MCP over Streamable HTTP): their refusals are JSON-RPC error
 * responses, `{jsonrpc: "2.0", id, error: {code, message}}`, which MCP clients read; every
 * other check applies.
 */
const JSON_RPC = new Set(['POST /mcp', 'POST /api/mcp']);

/**
 * The model gateway's routes speak the provider's protocol: the plugin's refusals are in the
 * provider's own error shape (Anthropic, OpenAI and Gemini all carry `error.message`), which
 * the coding tools read, while what the kernel refuses before the plugin decides (a body that
 * is not JSON, a malformed path, a foreign origin) keeps Keel's; every other check applies.
 */
const providerShaped = (name: string) => name.startsWith('POST /api/llm/');

/** A stack frame, a source path, or PostgreSQL's own wording. */
const LEAK = /\n\s+at |\bat [\w.<>]+ \(|\.ts:\d+|node_modules|syntax error at|violates|relation "|column "|duplicate key|invalid input syntax|current transaction is aborted|keel_bridge|keel_private|plugin_costs\./i;

interface Fixtures {
  companyId: string; agentId: string; foreignAgentId: string; secretId: string; secretGrantId: string; permissionGrantId: string;
  keyId: string; revisionId: string; challengeId: string;
}

async function ok(response: Promise<{ status: number; body: any; text: string }>): Promise<any> {
  const res = await response;
  if (res.status >= 300) throw new Error(`fixture request failed: ${res.status} ${res.text}`);
  return res.body;
}

/** A company with the resources every route parameter can name, made through the API. */
async function makeFixtures(api: Api, name: string): Promise<Fixtures & { agentToken: string; pausedAgentToken: string }> {
  const company = await createCompany(api, { name, budgetMonthlyCents: 1_000_000 });
  const agent = await createAgent(api, company.id, { name: `${name} Agent` });
  const paused = await createAgent(api, company.id, { name: `${name} Paused` });
  await ok(api.post(`/api/agents/${paused.id}/pause`, {}));
  const foreign = await createAgent(api, (await createCompany(api, { name: `${name} Elsewhere` })).id);
  const secret = await ok(api.post(`/api/companies/${company.id}/secrets`, { name: 'FUZZ_TARGET', value: 's3cret' }));
  const key = await ok(api.post(`/api/agents/${agent.id}/keys`, { name: 'fuzz' }));
  const pausedKey = await ok(api.post(`/api/agents/${paused.id}/keys`, { name: 'fuzz' }));
  return {
    companyId: company.id, agentId: agent.id, foreignAgentId: foreign.id, secretId: secret.id,
    secretGrantId: (await ok(api.post(`/api/agents/${agent.id}/secret-grants`, { secretId: secret.id, key: 'FUZZ_KEY', delivery: 'api' }))).id,
    permissionGrantId: (await ok(api.put(`/api/companies/${company.id}/permission-grants`, { principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign' }))).id,
    keyId: key.id, revisionId: (await ok(api.get(`/api/agents/${agent.id}/config-revisions`)))[0].id,
    challengeId: (await ok(api.post('/api/cli-auth/challenges', { clientName: 'fuzz' }))).id,
    agentToken: key.token, pausedAgentToken: pausedKey.token,
  };
}

/** The value of a route parameter that names the fixture of its kind (or, where the instance has none, nothing). */
function paramValue(f: Fixtures, path: string, name: string, pluginKey: string): string {
  switch (name) {
    case 'companyId': return f.companyId;
    case 'agentId': return f.agentId;
    case 'secretId': return f.secretId;
    case 'grantId': return path.includes('secret-grants') ? f.secretGrantId : f.permissionGrantId;
    case 'keyId': return f.keyId;
    case 'revisionId': return f.revisionId;
    case 'id': return f.challengeId;
    case 'pluginId': return pluginKey;
    case 'key': return path.includes('/secrets/') ? 'FUZZ_KEY' : 'summary';
    case 'jobId': return 'nightly';
    case 'endpointKey': return 'inbound';
    case 'folderKey': return 'docs';
    default: return UNKNOWN_UUID;
  }
}

function problemsOf(answer: RawAnswer, successAllowed: boolean, jsonRpc = false, provider = false): string | undefined {
  if (answer.transportError) return `no answer (${answer.transportError})`;
  const success = successAllowed && answer.status >= 200 && answer.status < 300;
  if (!success && (answer.status < 400 || answer.status >= 500)) return `answered ${answer.status}`;
  if (!answer.contentType.includes('application/json')) return `answered ${answer.status} as ${answer.contentType || 'no content type'}`;
  let body: { error?: unknown; code?: unknown; jsonrpc?: unknown };
  try { body = JSON.parse(answer.text); } catch { return `answered ${answer.status} with a body that is not JSON`; }
  if (!success && jsonRpc && answer.status !== 401 && answer.status !== 403) {
    const error = body?.error as { code?: unknown; message?: unknown } | undefined;
    if (body?.jsonrpc !== '2.0' || typeof error?.code !== 'number' || typeof error?.message !== 'string') return `answered ${answer.status} without a JSON-RPC error`;
  } else if (!success && provider) {
    const error = body?.error as { message?: unknown } | undefined;
    const keel = typeof body?.error === 'string' && typeof body?.code === 'string';
    if (!keel && typeof error?.message !== 'string') return `answered ${answer.status} without the provider's {error: {message}} or Keel's {error, code}`;
  } else if (!success && (typeof body?.error !== 'string' || typeof body?.code !== 'string')) return `answered ${answer.status} without {error, code}`;
  if (LEAK.test(answer.text)) return `answered ${answer.status} with a stack trace or database text`;
  return undefined;
}

/** A number from a route's name, so that each route's requests are the same from run to run whatever the order. */
function routeSeed(route: FuzzRoute): number {
  let hash = SEED;
  for (const char of `${route.method} ${route.path}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return hash >>> 0;
}

interface Run { routes: number; requests: number; problems: string[] }

async function fuzz(t: TestKernel, routes: FuzzRoute[], ctx: FuzzContext, perRoute: number): Promise<Run> {
  const client = rawClient(t.url, CONCURRENCY);
  const fingerprint = await fingerprinter(t);
  const problems: string[] = [];
  let requests = 0;
  try {
    for (let route of routes) {
      const name = `${route.method} ${route.path}`;
      const lenient = route.refusals.length === 0 && LENIENT[name] !== undefined;
      if (route.refusals.length === 0 && !lenient) {
        problems.push(`${name}: no request is certainly invalid for it (no path parameter, no 401 to an unknown token, no body it refuses); add it to LENIENT with the reason, or make it refuse bad input`);
        continue;
      }
      if (lenient) route = { ...route, refusals: ['none'] };
      const rng = new Random(routeSeed(route));
      const cases = Array.from({ length: perRoute }, () => fuzzRequest(rng, route, ctx));
      // What earlier, valid requests set off (a subscriber keeping a policy in step with a new
      // company) lands before the snapshot; what these requests set off lands before the next.
      await eventsSettled(t);
      const before = await fingerprint();
      const answers = await pool(cases, CONCURRENCY, ({ request }) => client.send(request));
      requests += cases.length;
      answers.forEach((answer, index) => {
        const problem = problemsOf(answer, lenient, JSON_RPC.has(name), providerShaped(name));
        if (problem) problems.push(`${name} #${index} [${cases[index]!.label}] ${cases[index]!.request.method} ${cases[index]!.request.path.slice(0, 160)}: ${problem}: ${answer.text.slice(0, 300)}`);
      });
      await eventsSettled(t);
      const changed = changedTables(before, await fingerprint());
      if (changed.length > 0) problems.push(`${name}: refused requests changed ${changed.join(', ')}`);
    }
  } finally {
    client.close();
  }
  return { routes: routes.length, requests, problems };
}

/** Problems listed in full up to a point, then counted: a broken route must not drown the report. */
const report = (run: Run) => [...run.problems.slice(0, 40), ...(run.problems.length > 40 ? [`... and ${run.problems.length - 40} more`] : [])];

let local: TestKernel;
let authed: TestKernel;
beforeAll(async () => {
  [local, authed] = await Promise.all([
    startTestKernel({ limits: { jsonBodyBytes: LIMIT, attachmentBytes: LIMIT } }, { firstPartyDir: FIRST_PARTY_PLUGINS }),
    startTestKernel({ deploymentMode: 'authenticated', limits: { jsonBodyBytes: LIMIT, attachmentBytes: LIMIT } }, { firstPartyDir: FIRST_PARTY_PLUGINS }),
  ]);
});
afterAll(async () => {
  await Promise.all([local?.stop(), authed?.stop()]);
});

/** The server still serves: health, and a normal write and read of the kernel and of a plugin. */
async function assertHealthy(t: TestKernel, api: Api): Promise<void> {
  expect((await t.api.get('/api/health')).status).toBe(200);
  const company = await createCompany(api, { name: 'After the fuzz' });
  const agent = await createAgent(api, company.id);
  const event = await api.post(`/api/companies/${company.id}/cost-events`, { agentId: agent.id, provider: 'p', model: 'm', costCents: 3, occurredAt: new Date().toISOString() });
  expect(event.status, event.text).toBe(201);
  const summary = await api.get(`/api/companies/${company.id}/costs/summary`);
  expect([summary.status, summary.body.spendCents]).toEqual([200, 3]);
}

describe('fuzzing every mutating route', () => {
  let localRoutes: FuzzRoute[] = [];

  it('local_trusted mode: every answer is a clean 4xx, nothing is written, the server keeps serving', async () => {
    const f = await makeFixtures(local.api, 'Fuzz Target');
    const boardKey = await boardToken(local, null);
    const client = rawClient(local.url, 1);
    try {
      localRoutes = [];
      // The valid probe goes to resources of its own (and to no plugin): a route that ignores its
      // body does what it does to them, after which the next probe gets fresh ones.
      let probed = await makeFixtures(local.api, 'Probe');
      for (const route of mutatingRoutes(local)) {
        const valid = { path: async () => fillPath(route.path, (name) => encodeURIComponent(paramValue(probed, route.path, name, 'no-such-plugin'))), headers: {} };
        const anonymousPath = fillPath(route.path, (name) => encodeURIComponent(paramValue(f, route.path, name, 'costs')));
        const { route: classified, validAccepted } = await classify(route, client.send, { anonymousPath, valid });
        localRoutes.push(classified);
        if (validAccepted) probed = await makeFixtures(local.api, 'Probe');
      }
    } finally {
      client.close();
    }
    expect(localRoutes.length).toBeGreaterThan(50);
    expect(localRoutes.filter((r) => r.owner === 'costs').length).toBeGreaterThan(5);

    const ctx: FuzzContext = {
      mode: 'local_trusted',
      validParam: (path, name) => paramValue(f, path, name, 'costs'),
      validAuthorization: ['', '', `Bearer ${boardKey}`, `Bearer ${f.agentToken}`, `Bearer ${f.pausedAgentToken}`],
      tokens: [boardKey, f.agentToken, f.pausedAgentToken],
      schema: { agentId: f.agentId, foreignAgentId: f.foreignAgentId },
      limitBytes: LIMIT,
    };
    const run = await fuzz(local, localRoutes, ctx, PER_ROUTE);
    expect(run.requests).toBeGreaterThanOrEqual(PER_ROUTE * 50);
    expect(report(run)).toEqual([]);
    await assertHealthy(local, local.api);
  }, 480_000);

  it('authenticated mode with board and agent keys: the same', async () => {
    const admin = await insertUser(authed, { admin: true });
    const boardKey = await boardToken(authed, admin);
    const api = authed.api.as(boardKey);
    const f = await makeFixtures(api, 'Fuzz Target');
    const reads = new Map(localRoutes.map((r) => [`${r.method} ${r.path}`, r.reads]));
    const client = rawClient(authed.url, 1);
    const routes: FuzzRoute[] = [];
    try {
      for (const route of mutatingRoutes(authed)) {
        const anonymousPath = fillPath(route.path, (name) => encodeURIComponent(paramValue(f, route.path, name, 'costs')));
        // What a route reads does not depend on the mode; the local_trusted run found it out.
        routes.push((await classify(route, client.send, { anonymousPath, knownReads: reads.get(`${route.method} ${route.path}`) })).route);
      }
    } finally {
      client.close();
    }
    const ctx: FuzzContext = {
      mode: 'authenticated',
      validParam: (path, name) => paramValue(f, path, name, 'costs'),
      validAuthorization: [`Bearer ${boardKey}`, `Bearer ${boardKey}`, `Bearer ${f.agentToken}`, `Bearer ${f.pausedAgentToken}`],
      tokens: [boardKey, f.agentToken, f.pausedAgentToken],
      schema: { agentId: f.agentId, foreignAgentId: f.foreignAgentId },
      limitBytes: LIMIT,
    };
    const run = await fuzz(authed, routes, ctx, PER_ROUTE_AUTHENTICATED);
    expect(report(run)).toEqual([]);
    await assertHealthy(authed, api);
  }, 480_000);
});
