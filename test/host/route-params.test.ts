import { describe, expect, it } from 'vitest';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';

/** Manifest rules of the path parameters that name a company: one of them, and in the path. */
const manifest = (route: Record<string, unknown>, entity: Record<string, unknown> = { type: 'note', table: 'notes' }) => ({
  key: 'params', version: '1.0.0', sdkApiVersion: 1, displayName: 'Params', entry: 'src/index.ts',
  capabilities: [{ id: 'http.routes', reason: 'routes' }, { id: 'database.namespace.write', reason: 'notes' }],
  database: { namespace: 'params', entities: [entity] },
  routes: [{ key: 'r', method: 'GET', auth: 'any', ...route }],
});

function issuesOf(value: unknown): Array<{ path: string; message: string }> {
  try {
    validateManifest(value);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidManifestError);
    return (error as InvalidManifestError).issues;
  }
}

describe('runParam', () => {
  it('is accepted when it is a parameter of the path', () => {
    expect(issuesOf(manifest({ path: '/runs/:runId/notes', runParam: 'runId' }))).toEqual([]);
  });

  it('must be in the path, and alone among the parameters that name the company', () => {
    expect(issuesOf(manifest({ path: '/runs/:id/notes', runParam: 'runId' }))).toContainEqual({ path: 'routes.0.runParam', message: 'names a parameter that is not in the path' });
    expect(issuesOf(manifest({ path: '/companies/:companyId/runs/:runId', runParam: 'runId', companyParam: 'companyId' })))
      .toContainEqual({ path: 'routes.0.runParam', message: 'names the company itself: use one of companyParam, agentParam, entityParam and runParam' });
  });
});

describe('database.entities hiddenColumn', () => {
  it('is a column name', () => {
    expect(issuesOf(manifest({ path: '/notes' }, { type: 'note', table: 'notes', hiddenColumn: 'hidden_at' }))).toEqual([]);
    expect(issuesOf(manifest({ path: '/notes' }, { type: 'note', table: 'notes', hiddenColumn: 'hidden at; drop' })).length).toBeGreaterThan(0);
  });
});

describe('perCompany routes', () => {
  it('are accepted for instance admins without a company of their own', () => {
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', perCompany: { sum: ['counts.found'] } }))).toEqual([]);
  });

  it('need auth instance_admin: no other caller may act in every company at once', () => {
    for (const auth of ['board', 'any', 'agent']) {
      expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth, perCompany: {} })))
        .toContainEqual({ path: 'routes.0.perCompany', message: 'needs auth instance_admin: only an instance admin may act in every company at once' });
    }
  });

  it('cannot also name a company, upload or batch', () => {
    const refused = { path: 'routes.0.perCompany', message: 'cannot be combined with a company of its own (companyParam, agentParam, entityParam, runParam), upload, download, batch or a stream' };
    expect(issuesOf(manifest({ path: '/companies/:companyId/sweep', method: 'POST', auth: 'instance_admin', companyParam: 'companyId', perCompany: {} }))).toContainEqual(refused);
    expect(issuesOf(manifest({ path: '/runs/:runId/sweep', method: 'POST', auth: 'instance_admin', runParam: 'runId', perCompany: {} }))).toContainEqual(refused);
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', batch: {}, perCompany: {} }))).toContainEqual(refused);
  });

  it('may name a selection handler, which is not a declared route itself', () => {
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', perCompany: { select: 'sweep-companies' } }))).toEqual([]);
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', perCompany: { select: 'r' } })))
      .toContainEqual({ path: 'routes.0.perCompany.select', message: 'names a handler that is not a route of its own: r is a declared route' });
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', perCompany: { select: 'Not A Key' } })).length).toBeGreaterThan(0);
  });

  it('name sums as dotted paths', () => {
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', perCompany: { sum: ['counts..x'] } })).length).toBeGreaterThan(0);
    expect(issuesOf(manifest({ path: '/sweep', method: 'POST', auth: 'instance_admin', perCompany: true })).length).toBeGreaterThan(0);
  });
});
