import catalogFolder from '../../catalog?files';
import { decodeBase64 } from '../skill-file/bytes.ts';
import { fileKind, SKILL_FILE, trustLevel, type FileKind, type TrustLevel } from '../skill-file/inventory.ts';
import type { SkillFile } from '../skill-file/skill-folder.ts';
import { readSkillMarkdown } from '../skill-file/skill-shape.ts';
import { contentHashOf, sha256Hex, utf8Bytes } from './sha256.ts';

/**
 * The catalog shipped with this plugin (plugins/skills/catalog/): `catalog.json` says what each
 * skill is for, `skills/<slug>/` holds its files. The files reach the isolate inside the bundle
 * (a folder import, read at build time); sizes, hashes, names and descriptions are computed
 * from them here, once per load, so nothing written by hand can drift from the bytes.
 */
export type CatalogKind = 'bundled' | 'optional';

export interface CatalogSource {
  type: 'github';
  hostname: string;
  owner: string;
  repo: string;
  ref: string;
  commit: string;
  path: string;
  url: string;
}

export interface CatalogFile { path: string; kind: FileKind; sizeBytes: number; sha256: string }

export interface CatalogSkill {
  id: string;
  key: string;
  kind: CatalogKind;
  category: string;
  slug: string;
  name: string;
  description: string | null;
  trustLevel: TrustLevel;
  compatibility: string;
  defaultInstall: boolean;
  /** Added to every agent at runtime (the base skill). */
  required: boolean;
  recommendedForRoles: string[];
  requires: string[];
  tags: string[];
  files: CatalogFile[];
  contentHash: string;
  source?: CatalogSource;
}

/** A catalog skill with the files an install writes. */
export interface CatalogEntry { skill: CatalogSkill; markdown: string; contents: SkillFile[] }

interface IndexEntry {
  slug: string;
  kind: CatalogKind;
  category: string;
  recommendedForRoles: string[];
  requires: string[];
  tags: string[];
  source?: Omit<CatalogSource, 'type' | 'url'> & { type: 'github' };
}

/** First-party catalog skills are keyed under this owner/repository; external ones under their own. */
export const FIRST_PARTY_KEY_PREFIX = 'keel/catalog';
const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;

function loadCatalog(): CatalogEntry[] {
  const index = catalogFolder.find((file) => file.path === 'catalog.json');
  if (!index?.text) throw new Error('skill catalog: catalog.json is missing');
  const entries = (JSON.parse(index.text) as { skills: IndexEntry[] }).skills;
  const seen = new Set<string>();
  const loaded = entries.map((entry) => {
    if (!SLUG.test(entry.slug) || seen.has(entry.slug)) throw new Error(`skill catalog: slug ${entry.slug} is not kebab-case or not unique`);
    if (entry.kind !== 'bundled' && entry.kind !== 'optional') throw new Error(`skill catalog: ${entry.slug} has kind ${String(entry.kind)}`);
    seen.add(entry.slug);
    return loadEntry(entry);
  });
  const stray = catalogFolder.filter((file) => file.path !== 'catalog.json' && !seen.has(file.path.split('/')[1] ?? ''));
  if (stray.length > 0) throw new Error(`skill catalog: files of no catalog skill: ${stray.map((file) => file.path).join(', ')}`);
  return loaded;
}

function loadEntry(entry: IndexEntry): CatalogEntry {
  const prefix = `skills/${entry.slug}/`;
  const folder = catalogFolder.filter((file) => file.path.startsWith(prefix));
  const contents: SkillFile[] = [];
  const files: CatalogFile[] = [];
  for (const file of folder) {
    const path = file.path.slice(prefix.length);
    const bytes = file.text !== undefined ? utf8Bytes(file.text) : decodeBase64(file.base64 ?? '');
    const kind = fileKind(path);
    contents.push(file.text !== undefined ? { path, kind, encoding: 'utf8', content: file.text } : { path, kind, encoding: 'base64', content: file.base64 ?? '' });
    files.push({ path, kind, sizeBytes: bytes.length, sha256: sha256Hex(bytes) });
  }
  const markdown = contents.find((file) => file.path === SKILL_FILE);
  if (!markdown || markdown.encoding !== 'utf8') throw new Error(`skill catalog: ${entry.slug} has no text ${SKILL_FILE}`);
  const shape = readSkillMarkdown(markdown.content, entry.slug);
  if (shape.slug !== entry.slug) throw new Error(`skill catalog: ${prefix}${SKILL_FILE} names slug ${shape.slug}`);
  const source = entry.source ? { ...entry.source, url: `https://${entry.source.hostname}/${entry.source.owner}/${entry.source.repo}/tree/${entry.source.commit}/${entry.source.path}` } : undefined;
  const key = source ? `${source.owner}/${source.repo}/${entry.slug}`.toLowerCase() : `${FIRST_PARTY_KEY_PREFIX}/${entry.slug}`;
  const skill: CatalogSkill = {
    id: `catalog:${entry.slug}`,
    key,
    kind: entry.kind,
    category: entry.category,
    slug: entry.slug,
    name: shape.name,
    description: shape.description,
    trustLevel: trustLevel(files),
    compatibility: 'compatible',
    defaultInstall: false,
    required: entry.kind === 'bundled' && shape.required,
    recommendedForRoles: entry.recommendedForRoles,
    requires: entry.requires,
    tags: entry.tags,
    files,
    contentHash: contentHashOf(files),
    ...(source ? { source } : {}),
  };
  return { skill, markdown: markdown.content, contents };
}

/** By kind (bundled first), then slug. */
export const CATALOG: readonly CatalogEntry[] = loadCatalog()
  .sort((a, b) => (a.skill.kind === b.skill.kind ? (a.skill.slug < b.skill.slug ? -1 : 1) : a.skill.kind === 'bundled' ? -1 : 1));

/** A catalog skill by id, key or slug (slugs are unique in the catalog); null when none matches. */
export function findCatalogEntry(reference: string): CatalogEntry | null {
  const wanted = reference.trim().toLowerCase();
  return CATALOG.find(({ skill }) => skill.id === wanted || skill.key === wanted || skill.slug === wanted) ?? null;
}

/** The catalog entry an installed skill came from (metadata.catalogId, else its key). */
export function catalogEntryOf(row: Record<string, unknown>): CatalogEntry | null {
  const metadata = (row.metadata ?? {}) as Record<string, unknown>;
  const id = typeof metadata.catalogId === 'string' ? metadata.catalogId : null;
  return (id ? CATALOG.find(({ skill }) => skill.id === id) : null) ?? CATALOG.find(({ skill }) => skill.key === row.key) ?? null;
}

/** Keys of the bundled skills every agent gets (desiredSkills are united with these). */
export function requiredBundledKeys(): string[] {
  return CATALOG.filter(({ skill }) => skill.required).map(({ skill }) => skill.key);
}
