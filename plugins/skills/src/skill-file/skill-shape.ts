import { parseFrontmatter, splitFrontmatter, type YamlObject, type YamlValue } from './frontmatter.ts';

/** What SKILL.md says about a skill, read from its frontmatter (pure). */
export interface SkillShape {
  name: string;
  slug: string;
  description: string | null;
  required: boolean;
  /** A canonical key the file names for itself (frontmatter key/skillKey or a metadata key). */
  keyOverride: string | null;
  /** Frontmatter `metadata`, persisted as-is. */
  metadata: YamlObject;
  frontmatter: YamlObject;
  body: string;
}

export const MAX_SLUG_LENGTH = 128;

/** kebab-case: lower-case letters and digits separated by single dashes; '' when nothing is left. */
export function toSlug(text: string): string {
  return text
    .normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG_LENGTH)
    .replace(/-+$/g, '');
}

const asText = (value: YamlValue | undefined): string | null => {
  if (typeof value === 'string') return value.trim() === '' ? null : value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return null;
};
const asObject = (value: YamlValue | undefined): YamlObject | null =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? value : null;

/**
 * The canonical key a file claims: frontmatter `key` or `skillKey`, then `metadata.skillKey`,
 * `metadata.canonicalKey`, `metadata.serviceSkillKey`, `metadata.service.skillKey`,
 * `metadata.service.key`.
 */
export function keyOverrideOf(frontmatter: YamlObject): string | null {
  const metadata = asObject(frontmatter.metadata) ?? {};
  const service = asObject(metadata.service) ?? {};
  const candidates = [frontmatter.key, frontmatter.skillKey, metadata.skillKey, metadata.canonicalKey, metadata.serviceSkillKey, service.skillKey, service.key];
  for (const candidate of candidates) {
    const key = normaliseKey(asText(candidate));
    if (key) return key;
  }
  return null;
}

/** A canonical key: 1-512 characters, `/`-separated segments of letters, digits, `.`, `_`, `-`; lower-cased. */
export function normaliseKey(raw: string | null): string | null {
  if (!raw) return null;
  const key = raw.trim().toLowerCase();
  if (key.length === 0 || key.length > 512) return null;
  const segments = key.split('/');
  if (segments.some((segment) => !/^[a-z0-9][a-z0-9._-]*$/.test(segment) || segment === '.' || segment === '..')) return null;
  return key;
}

/**
 * Reads SKILL.md: name falls back to the slug; the slug comes from `slug`, else `name`, else
 * the folder's name (else "skill"); a block-scalar description is the block's text.
 */
export function readSkillMarkdown(markdown: string, folderName: string | null): SkillShape {
  const { frontmatter: yaml, body } = splitFrontmatter(markdown);
  const frontmatter = yaml === null ? {} : parseFrontmatter(yaml);
  const name = asText(frontmatter.name);
  const slug = toSlug(asText(frontmatter.slug) ?? '') || toSlug(name ?? '') || toSlug(folderName ?? '') || 'skill';
  return {
    name: name ?? slug,
    slug,
    description: asText(frontmatter.description),
    required: frontmatter.required === true,
    keyOverride: keyOverrideOf(frontmatter),
    metadata: asObject(frontmatter.metadata) ?? {},
    frontmatter,
    body,
  };
}

/** Imported skills: `<owner>/<repo>/<slug>`; company-local ones: `company/<companyId>/<slug>`. */
export function importedKey(owner: string, repo: string, slug: string): string {
  return `${owner.toLowerCase()}/${repo.toLowerCase()}/${slug}`;
}
export function localKey(companyId: string, slug: string): string {
  return `company/${companyId.toLowerCase()}/${slug}`;
}
