import type { DatabaseCapability } from '@keel/sdk/plugin';
import { syncModeOf, type SyncMode } from './adapter-modes.ts';

export interface SnapshotEntry {
  key: string;
  runtimeName: string;
  desired: boolean;
  managed: boolean;
  required: boolean;
  state: 'installed' | 'configured' | 'available' | 'missing';
  origin: 'service_required' | 'company';
}

export interface SkillSnapshot {
  adapterType: string;
  supported: boolean;
  mode: SyncMode;
  desiredSkills: string[];
  entries: SnapshotEntry[];
  warnings: string[];
}

/**
 * The agent's skills as its adapter will receive them: every skill of the company (desired or
 * available), the required ones always desired, and each desired key that names no skill of the
 * company as `missing` with a warning (it is kept in the list, never dropped). A desired skill is
 * `installed` for a persistent adapter (kept in its working directory) and `configured` for an
 * ephemeral one (materialised at each run) or an unsupported one (recorded only).
 */
export async function buildSnapshot(db: DatabaseCapability, companyId: string, adapterType: string, desired: string[]): Promise<SkillSnapshot> {
  const mode = syncModeOf(adapterType);
  const { rows } = await db.query('select id::text as id, key, slug, required from company_skills where company_id = $1 order by key', [companyId]);
  const required = rows.filter((row) => row.required === true).map((row) => String(row.key));
  const desiredSkills = [...new Set([...desired, ...required])];
  const wanted = new Set(desiredSkills);
  const known = new Set(rows.map((row) => String(row.key)));
  const slugCounts = new Map<string, number>();
  for (const row of rows) slugCounts.set(String(row.slug), (slugCounts.get(String(row.slug)) ?? 0) + 1);
  const desiredState = mode === 'persistent' ? 'installed' : 'configured';
  const entries: SnapshotEntry[] = rows.map((row) => {
    const slug = String(row.slug);
    const isDesired = wanted.has(String(row.key));
    return {
      key: String(row.key),
      runtimeName: (slugCounts.get(slug) ?? 0) > 1 ? `${slug}-${String(row.id).slice(0, 8)}` : slug,
      desired: isDesired,
      managed: true,
      required: row.required === true,
      state: isDesired ? desiredState : 'available',
      origin: row.required === true ? 'service_required' : 'company',
    };
  });
  const warnings: string[] = [];
  for (const key of desiredSkills) {
    if (known.has(key)) continue;
    entries.push({ key, runtimeName: key.split('/').pop() || key, desired: true, managed: true, required: false, state: 'missing', origin: 'company' });
    warnings.push(`Desired skill ${key} is not in the company's skills; it cannot be materialised until it is installed again`);
  }
  if (mode === 'unsupported') warnings.push(`Adapter ${adapterType} cannot receive skill files; the desired skills are recorded only`);
  return { adapterType, supported: mode !== 'unsupported', mode, desiredSkills, entries, warnings };
}
