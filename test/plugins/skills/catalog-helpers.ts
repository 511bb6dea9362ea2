import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import type { TestKernel } from '../../support/harness.ts';

/** The catalog as shipped in the repository, read with Node's own file system and crypto. */
export const CATALOG_DIR = resolve(import.meta.dirname, '../../../plugins/skills/catalog');
export const UPLOAD_HELPER = join(CATALOG_DIR, 'skills/service/scripts/upload-attachment.mjs');

export const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

export function shippedFiles(slug: string): Array<{ path: string; bytes: Buffer }> {
  const root = join(CATALOG_DIR, 'skills', slug);
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
  return walk(root).map((path) => ({ path: relative(root, path).split(sep).join('/'), bytes: readFileSync(path) }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** `sha256sum` listing hash, as the catalog defines contentHash. */
export function listingHash(files: Array<{ path: string; sha256: string }>): string {
  return sha256([...files].sort((a, b) => (a.path < b.path ? -1 : 1)).map((file) => `${file.sha256}  ${file.path}\n`).join(''));
}

export const catalogIndex = () => JSON.parse(readFileSync(join(CATALOG_DIR, 'catalog.json'), 'utf8')).skills as Array<{ slug: string; kind: string; category: string; tags: string[]; recommendedForRoles: string[]; requires: string[]; source?: Record<string, string> }>;

export const skillsPath = (companyId: string) => `/api/companies/${companyId}/skills`;
export const installPath = (companyId: string) => `/api/companies/${companyId}/skills/install-catalog`;

export async function activities(t: TestKernel, companyId: string, action: string): Promise<any[]> {
  const { rows } = await t.sql.query('select * from activity_log where company_id = $1 and action = $2 order by created_at, id', [companyId, action]);
  return rows;
}

/** Activity entries a request asked for: without the installs of the required bundled skill an agent's create makes. */
export function requested(entries: any[]): any[] {
  return entries.filter((entry) => entry.details?.reason !== 'bundled_reimport');
}

/** The key of the required bundled skill every agent gets (installed when an agent is created). */
export const REQUIRED_BUNDLED_KEY = 'keel/catalog/service';

export async function storedSkills(t: TestKernel, companyId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select * from plugin_skills.company_skills where company_id = $1 order by key', [companyId]);
  return rows;
}
