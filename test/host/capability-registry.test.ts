import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES, allCapabilityMethods, type CapabilitySpec } from '../../sdk/capabilities/index.ts';
import { capabilityDenial } from '../../sdk/capabilities/check-call.ts';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';

/**
 * Tests generated from the capability registry (sdk/capabilities): for every capability, an
 * allowed test (granted alone, each of its methods gets past the host's check and answers what
 * its result schema says) and a denied test (not granted, each method is refused with the
 * registry's denial, even when plugin code calls the host bridge directly). Contribution
 * capabilities are checked on the manifest: the fields that need them are refused without them.
 */
const PROBE = fileURLToPath(new URL('./fixtures/cap-probe', import.meta.url));
let t: TestKernel;
let company: any;
let agent: any;

/** A small folder inside the default import roots (the instance's temporary directory) for local.import. */
const probeDir = mkdtempSync(joinPath(tmpdir(), 'keel-import-probe-'));
writeFileSync(joinPath(probeDir, 'SKILL.md'), '# probe');

/** Example arguments per method; the test fails when a registry method has none. */
const examples = (): Record<string, unknown[]> => ({
  'db.query': ['select 1 as n'],
  'activity.record': [{ action: 'probe.ran', entityType: 'probe', entityId: '1' }],
  'activity.list': [{ entityType: 'probe', limit: 5 }],
  'http.fetch': ['https://example.invalid/'],
  'http.checkProxyTarget': ['https://203.0.113.5/'],
  'folders.read': ['notes', 'a.md'],
  'folders.write': ['notes', 'a.md', 'text'],
  'folders.list': ['notes'],
  'folders.exists': ['notes', 'a.md'],
  'workspaces.inspect': ['/srv/work'],
  'workspaces.makeDirectory': ['/srv/work/leases/a'],
  'workspaces.removeDirectory': ['/srv/work/leases/a'],
  'workspaces.gitStatus': ['/srv/work'],
  'companies.get': [company.id],
  'agents.get': [agent.id],
  'agents.list': [],
  'agents.getConfig': [agent.id],
  'agents.getManaged': ['probe'],
  'agents.provisionManaged': ['probe'],
  'agents.pause': [agent.id, 'probe'],
  'agents.resume': [agent.id, 'probe'],
  'agents.setDesiredSkills': [agent.id, ['probe/skill']],
  'localImport.read': [probeDir],
  'configSecrets.resolve': ['token'],
  'agents.setInstructionKeys': [agent.id, { instructionsFilePath: '/srv/agents/AGENTS.md' }],
  'approvals.list': [{ status: 'pending', limit: 10 }],
  'approvals.count': [{ status: 'pending' }],
  'companies.pause': ['probe'],
  'companies.resume': ['probe'],
  'companies.nextIssueNumber': [],
  'companies.nextIssueNumbers': [3],
  'runs.open': [{ agentId: agent.id }],
  'runs.close': [randomUUID(), { status: 'cancelled' }],
  'runs.get': [[randomUUID()]],
  'runs.withContext': [{ issueId: randomUUID() }],
  'runs.recent': [{ statuses: ['failed', 'timed_out'], since: new Date(Date.now() - 86_400_000).toISOString(), limit: 5 }],
  'secrets.resolveEnvironment': [agent.id],
  'secrets.store': [{ name: 'probe', value: 'probe-value' }],
  'secrets.describe': [randomUUID()],
  'services.call': ['nobody', 'nothing', {}],
  'services.adapterContributor': ['probe_type'],
  'streams.publish': ['probe', { n: 1 }],
  'budgets.setMonthlyBudget': [{ scope: 'company', cents: 1000 }],
  'jobs.enqueue': ['undeclared', {}],
  'jobs.cancel': [randomUUID()],
  'progress.report': [{ done: 1 }],
  'events.publish': ['cap-probe.undeclared', {}, { entityType: 'probe', entityId: '1' }],
  'blobs.get': [randomUUID()],
  'blobs.readText': [randomUUID()],
  'blobs.createText': [{ text: 'probe' }],
  'blobs.link': [randomUUID(), 'nobody'],
  'blobs.delete': [randomUUID()],
  'principals.actor': [['users:manage_permissions']],
  'principals.agent': [agent.id, ['users:manage_permissions']],
  'executions.start': [{ kind: 'process', runId: randomUUID() }],
  'executions.get': [randomUUID()],
  'executions.getMany': [[randomUUID()]],
  'executions.log': [randomUUID(), { offset: 0 }],
  'executions.cancel': [randomUUID()],
  'executions.probe': [{ agentId: randomUUID(), args: ['--version'] }],
  'executions.callbackUrl': [],
  'workspaceProcesses.start': [{ purpose: 'command', workspaceRef: 'probe', label: 'Probe', cwd: '/srv/work', command: '/bin/true' }],
  'workspaceProcesses.get': [randomUUID()],
  'workspaceProcesses.log': [randomUUID(), { offset: 0 }],
  'workspaceProcesses.stop': [randomUUID()],
  'catalog.get': [],
  'instanceSettings.get': ['experimental'],
});

const probe = async (key: string, member: string, method: string, args: unknown[]) => {
  const res = await t.api.post(`/api/plugins/${key}/companies/${company.id}/probe`, { member, method, args });
  expect(res.status, res.text).toBe(200);
  return res.body as { present: boolean; ok: boolean; value?: unknown; error: { status: number; code: string; message: string } | null };
};

let variants = 0;
/** The probe, installed under a key of its own with exactly these capabilities (and http.routes). */
async function probeWith(ids: string[]): Promise<string> {
  const key = `cap-probe-${++variants}`;
  const folder = await pluginVariant(PROBE, (manifest) => {
    manifest.key = key;
    manifest.capabilities = [{ id: 'http.routes', reason: 'Serves the probe' }, ...ids.map((id) => ({ id, reason: 'Probed by the registry tests' }))];
    if (ids.some((id) => id.startsWith('database.namespace.'))) manifest.database = { namespace: `cap_probe_${variants}` };
  });
  return installAndEnable(t, folder);
}

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  agent = await createAgent(t.api, company.id);
});
afterAll(async () => { await t?.stop(); });

describe('capability registry', () => {
  it('is listed in full in docs/plugins/capabilities.md', () => {
    const page = readFileSync(fileURLToPath(new URL('../../docs/plugins/capabilities.md', import.meta.url)), 'utf8');
    const missing = (CAPABILITIES as readonly CapabilitySpec[]).map((spec) => spec.id).filter((id) => !page.includes(`| \`${id}\` |`));
    expect(missing).toEqual([]);
  });

  it('has an example for every method it declares', () => {
    const missing = allCapabilityMethods().map((found) => `${found.member}.${found.method}`).filter((name) => !(name in examples()));
    expect(missing).toEqual([]);
  });

  it('denies every method to a plugin granted none of its capabilities, with the registry\'s denial', async () => {
    const key = await probeWith([]);
    for (const found of allCapabilityMethods()) {
      const answer = await probe(key, found.member, found.method, examples()[`${found.member}.${found.method}`]!);
      const name = `${found.member}.${found.method}`;
      expect(answer.present, `${name}: the SDK builds no member that was not granted`).toBe(false);
      expect(answer.error, name).toEqual({ status: 403, code: 'capability_denied', message: capabilityDenial(key, found.member, found.method, found.grantedBy) });
    }
  });

  const withMethods = (CAPABILITIES as readonly CapabilitySpec[]).filter((spec) => Object.keys(spec.members).length > 0);
  const ajv = new Ajv({ strict: false });
  for (const spec of withMethods) {
    it(`allows what ${spec.id} grants, granted alone, and answers as declared`, async () => {
      const key = await probeWith([spec.id]);
      try {
        for (const [member, methods] of Object.entries(spec.members)) {
          for (const [method, declared] of Object.entries(methods)) {
            const answer = await probe(key, member, method, examples()[`${member}.${method}`]!);
            const name = `${spec.id}: ${member}.${method}`;
            expect(answer.present, name).toBe(true);
            if (!answer.ok) {
              // The call may fail on its merits (an unknown id, an undeclared folder), never on the grant.
              expect(['capability_denied', 'unknown_capability', 'company_scope_required', 'invalid_arguments'], `${name}: ${JSON.stringify(answer.error)}`).not.toContain(answer.error?.code);
              continue;
            }
            const valid = ajv.validate(declared.result, answer.value ?? null);
            expect(valid, `${name} answered ${JSON.stringify(answer.value)}: ${ajv.errorsText()}`).toBe(true);
          }
        }
      } finally {
        await t.api.post(`/api/plugins/${key}/disable`, {});
      }
    });
  }
});

describe('contribution capabilities on the manifest', () => {
  /** A manifest with every contribution the registry guards. */
  const full = () => ({
    key: 'everything', version: '1.0.0', sdkApiVersion: 1, displayName: 'Everything', entry: 'src/index.ts',
    capabilities: (CAPABILITIES as readonly CapabilitySpec[]).map((spec) => ({ id: spec.id, reason: 'Declares everything' })),
    database: { namespace: 'everything' },
    routes: [
      { key: 'r', method: 'GET', path: '/r', auth: 'board' },
      { key: 'a', method: 'GET', path: '/api/everything/a', auth: 'board', absolute: true },
      { key: 'p', method: 'GET', path: '/everything.txt', auth: 'none', absolute: true },
      { key: 'd', method: 'GET', path: '/companies/:companyId/d', auth: 'board', companyParam: 'companyId', download: true },
      { key: 'u', method: 'POST', path: '/companies/:companyId/u', auth: 'board', companyParam: 'companyId', upload: { field: 'file', contentTypes: ['text/plain'] } },
      { key: 'x', method: 'POST', path: '/x', auth: 'none', proxy: { credentialHeaders: ['x-api-key'], bodyFields: ['model'] } },
    ],
    tools: [{ key: 't', description: 'A tool', inputSchema: { type: 'object' } }],
    jobs: [{ key: 'j' }],
    webhooks: [{ key: 'w' }],
    events: [{ event: 'agent.created', mode: 'after_commit' }, { event: 'agent.updated', mode: 'in_transaction' }],
    publishedEvents: [{ name: 'everything.happened', schema: { type: 'object' } }],
    ui: { slots: [{ slot: 'dashboard', key: 's' }], pages: [{ key: 'p', title: 'P', path: '/p' }] },
    folders: [{ key: 'notes', access: 'read' }],
    network: { allow: ['example.com'] },
    services: { provides: [{ key: 'svc' }], consumes: [{ plugin: 'other', service: 'svc' }] },
    kernelPoints: [{ point: 'agent.desired-skills', service: 'svc' }],
    portability: { exportService: 'svc', importService: 'svc' },
    managed: { agents: [{ key: 'helper', name: 'Helper' }], projects: [{ key: 'notes', name: 'Notes' }], skills: [{ slug: 'notes', name: 'Notes' }], routines: [{ key: 'tidy', agentKey: 'helper', title: 'Tidy', intervalSec: 3600 }] },
  });

  it('accepts the manifest with every capability declared', () => {
    expect(() => validateManifest(full())).not.toThrow();
  });

  for (const spec of (CAPABILITIES as readonly CapabilitySpec[]).filter((candidate) => candidate.requiredBy)) {
    it(`refuses the fields that need ${spec.id} without it`, () => {
      const manifest = full();
      const serving = [spec.id, ...(spec.satisfiedAlsoBy ?? [])];
      manifest.capabilities = manifest.capabilities.filter((capability) => !serving.includes(capability.id));
      const paths = spec.requiredBy!(manifest as never);
      expect(paths.length, `${spec.id} guards nothing in the sample manifest`).toBeGreaterThan(0);
      let refused: InvalidManifestError | undefined;
      try { validateManifest(manifest); } catch (error) { refused = error as InvalidManifestError; }
      expect(refused, spec.id).toBeInstanceOf(InvalidManifestError);
      for (const path of paths) {
        expect(refused!.issues, `${spec.id} at ${path}`).toContainEqual({ path, message: `needs the ${serving.join(' or ')} capability; declare it under capabilities` });
      }
    });
  }
});
