import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { SKILL_FILE } from '../skill-file/inventory.ts';
import { safeSkillPath } from '../skill-file/skill-folder.ts';
import { CATALOG, findCatalogEntry, type CatalogEntry, type CatalogSkill } from './catalog-content.ts';

/** The catalog browse routes: any authenticated caller, no company involved, nothing written. */

/** GET /api/skills/catalog?kind=&category=&q=: `category` matches exactly, `q` is free text. */
export function listCatalog(req: RouteRequest): CatalogSkill[] {
  const kind = typeof req.query.kind === 'string' ? req.query.kind : null;
  const category = typeof req.query.category === 'string' && req.query.category !== '' ? req.query.category : null;
  const words = typeof req.query.q === 'string' ? req.query.q.toLowerCase().split(/\s+/).filter(Boolean) : [];
  return CATALOG.map(({ skill }) => skill)
    .filter((skill) => (!kind || skill.kind === kind) && (!category || skill.category === category))
    .filter((skill) => {
      if (words.length === 0) return true;
      // Every word must appear somewhere in the searchable text of the skill.
      const text = searchableText(skill);
      return words.every((word) => text.includes(word));
    });
}

function searchableText(skill: CatalogSkill): string {
  return [skill.id, skill.key, skill.slug, skill.name, skill.description ?? '', skill.category, skill.kind, ...skill.recommendedForRoles, ...skill.tags]
    .join('\n').toLowerCase();
}

/** The catalog entry a path parameter names (id, key or slug); 404 when none. */
export function catalogEntry(reference: string): CatalogEntry {
  const entry = findCatalogEntry(reference);
  if (!entry) throw new PluginError(404, 'catalog_skill_not_found', 'Catalog skill not found', { catalogSkillId: reference });
  return entry;
}

/** GET /api/skills/catalog/{catalogId} */
export function getCatalogSkill(req: RouteRequest): CatalogSkill {
  return catalogEntry(req.params.catalogId!).skill;
}

/** GET /api/skills/catalog/{catalogId}/files?path=: a text file of the skill (SKILL.md by default); assets are not previewable. */
export function getCatalogFile(req: RouteRequest): Record<string, unknown> {
  const entry = catalogEntry(req.params.catalogId!);
  const path = typeof req.query.path === 'string' && req.query.path !== '' ? req.query.path : SKILL_FILE;
  if (!safeSkillPath(path)) throw new PluginError(400, 'invalid_skill_path', 'The path must be relative to the skill folder, without "..", empty segments or backslashes');
  const file = entry.skill.files.find((candidate) => candidate.path === path);
  const content = entry.contents.find((candidate) => candidate.path === path);
  if (!file || !content) throw new PluginError(404, 'catalog_skill_file_not_found', 'Catalog skill file not found', { path });
  if (file.kind === 'asset' || content.encoding !== 'utf8') {
    throw new PluginError(422, 'catalog_file_not_previewable', `${path} is an asset and cannot be previewed; install the skill to use it`, { path, kind: file.kind });
  }
  return {
    catalogSkillId: entry.skill.id,
    path: file.path,
    kind: file.kind,
    sizeBytes: file.sizeBytes,
    sha256: file.sha256,
    markdown: /\.(md|markdown)$/i.test(file.path),
    content: content.content,
  };
}
