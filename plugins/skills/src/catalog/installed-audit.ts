import type { SkillsContext } from '../context.ts';
import { AUDIT_SCAN_VERSION, auditFiles } from './audit.ts';
import { storedFiles } from './catalog-store.ts';

type Row = Record<string, unknown>;

/** The origin hash an installed copy was made from, or null (skills created here have none). */
export const originHashOf = (row: Row): string | null => {
  const origin = ((row.metadata ?? {}) as Row).originHash;
  return typeof origin === 'string' ? origin : null;
};

/** The audit of an installed skill (a row read with its `installed_hash`), from its stored files. */
export async function auditInstalled(ctx: SkillsContext, row: Row) {
  const files = await storedFiles(ctx.db, String(row.id));
  const installedHash = String(row.installed_hash);
  const originHash = originHashOf(row);
  const result = auditFiles(files.map((file) => ({ path: String(file.path), kind: String(file.kind), encoding: String(file.encoding), content: String(file.content), sizeBytes: Number(file.size_bytes) })), { installedHash, originHash });
  return { verdict: result.verdict, codes: result.codes, findings: result.findings, installedHash, originHash, scanVersion: AUDIT_SCAN_VERSION };
}
