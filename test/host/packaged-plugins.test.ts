import { expect, it } from 'vitest';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';

/** Manifest rules of the contribution points the packaged wiki plugin brought: folder watches and companyField. */
const manifest = (extra: Record<string, unknown>) => ({
  key: 'probe', version: '1.0.0', sdkApiVersion: 1, displayName: 'Probe', entry: 'src/index.ts',
  capabilities: [{ id: 'local.folders', reason: 'reads files' }, { id: 'jobs.schedule', reason: 'runs jobs' }, { id: 'http.routes', reason: 'serves routes' }],
  ...extra,
});

function issues(input: unknown): Array<{ path: string; message: string }> {
  try {
    validateManifest(input);
    return [];
  } catch (error) {
    if (error instanceof InvalidManifestError) return error.issues;
    throw error;
  }
}

it('accepts a folder watch naming a declared job, and distribution package', () => {
  expect(issues(manifest({ distribution: 'package', jobs: [{ key: 'changed' }], folders: [{ key: 'root', access: 'read', onChange: { job: 'changed' } }] }))).toEqual([]);
});

it('refuses a folder watch naming no declared job, and an unknown distribution', () => {
  expect(issues(manifest({ folders: [{ key: 'root', access: 'read', onChange: { job: 'missing' } }] }))).toContainEqual({ path: 'folders.0.onChange.job', message: 'names no job declared under jobs' });
  expect(issues(manifest({ distribution: 'registry' })).map((issue) => issue.path)).toContain('distribution');
});

it('refuses companyField together with another way of naming the company', () => {
  const route = { key: 'r', method: 'GET', path: '/companies/:companyId/r', auth: 'any', companyParam: 'companyId', companyField: 'companyId' };
  expect(issues(manifest({ routes: [route] }))).toContainEqual(expect.objectContaining({ path: 'routes.0.companyField' }));
  expect(issues(manifest({ routes: [{ key: 'r', method: 'GET', path: '/r', auth: 'any', companyField: 'companyId' }] }))).toEqual([]);
});
