import { parseUrl } from './url-parts.ts';
import { PluginError } from '@keel/sdk/plugin';
import type { SkillsContext } from '../context.ts';
import { decodeBase64, utf8Text } from '../skill-file/bytes.ts';
import { MAX_SKILL_FILE_BYTES, SKILL_FILE } from '../skill-file/inventory.ts';
import { readSkillFolder, type SkillFolder, type SourceFile } from '../skill-file/skill-folder.ts';
import { toSlug } from '../skill-file/skill-shape.ts';
import type { SourceLocator } from './source-locator.ts';

type GithubLocator = Extract<SourceLocator, { form: 'github' }>;
export interface ResolvedRepository { owner: string; repo: string; hostname: string; ref: string; commit: string; path: string; defaultBranch: string }
export interface FetchedSkill { folder: SkillFolder; path: string }

const DEFAULT_API = 'https://api.github.com';
const MAX_TREE_SKILLS = 200;

export function apiBase(ctx: SkillsContext): string {
  const configured = typeof ctx.config.githubApiBase === 'string' ? ctx.config.githubApiBase : DEFAULT_API;
  return configured.replace(/\/+$/, '');
}

/** The web host skills are recorded under: github.com for the public API, the server's host otherwise. */
function webHostname(base: string): string {
  const host = parseUrl(base)?.host ?? 'github.com';
  return host === 'api.github.com' ? 'github.com' : host;
}

/** The company's GitHub token (config githubToken, a vault reference), resolved once per call. */
const tokens = new WeakMap<object, Promise<string | null>>();
function githubToken(ctx: SkillsContext): Promise<string | null> {
  let token = tokens.get(ctx);
  if (!token) {
    token = ctx.config.githubToken === undefined ? Promise.resolve(null) : ctx.configSecrets.resolve('githubToken').then((secret) => secret?.value ?? null);
    tokens.set(ctx, token);
  }
  return token;
}

async function getJson<T>(ctx: SkillsContext, url: string, what: string, missing: () => PluginError): Promise<T | null> {
  let response;
  const headers: Record<string, string> = { Accept: 'application/vnd.github+json', 'User-Agent': 'keel-skills', 'X-GitHub-Api-Version': '2022-11-28' };
  // Every getJson address is under the configured API base, so the token goes to that server only.
  const token = await githubToken(ctx);
  if (token) headers.Authorization = `Bearer ${token}`;
  try {
    response = await ctx.http.fetch(url, { headers });
  } catch (error) {
    throw new PluginError(502, 'skill_source_unreachable', `Could not reach the GitHub API for ${what}: ${(error as Error).message}`);
  }
  if (response.status === 404 || response.status === 422) {
    const error = missing();
    if (error.status === 0) return null;
    throw error;
  }
  if (response.status === 403 || response.status === 429) throw new PluginError(502, 'skill_source_rate_limited', `The GitHub API refused ${what} (status ${response.status}; rate limit or access)`);
  if (response.status < 200 || response.status >= 300) throw new PluginError(502, 'skill_source_failed', `The GitHub API answered ${response.status} for ${what}`);
  try {
    return JSON.parse(response.body) as T;
  } catch {
    throw new PluginError(502, 'skill_source_failed', `The GitHub API answered ${what} with invalid JSON`);
  }
}

const notFound = (message: string) => () => new PluginError(422, 'skill_source_not_found', message);
const soft = () => new PluginError(0, 'soft', '');
const repoPath = (locator: { owner: string; repo: string }) => `/repos/${encodeURIComponent(locator.owner)}/${encodeURIComponent(locator.repo)}`;

/**
 * Pins the source to a commit: the repository (its default branch), then the commit of the ref.
 * For `tree/<ref>/<path>` the ref may itself contain `/`: the longest prefix that names a
 * commit wins, and the rest is the path.
 */
export async function resolveRepository(ctx: SkillsContext, locator: GithubLocator): Promise<ResolvedRepository> {
  const base = apiBase(ctx);
  const name = `${locator.owner}/${locator.repo}`;
  const repository = await getJson<{ default_branch?: string; name?: string; owner?: { login?: string } }>(ctx, `${base}${repoPath(locator)}`, `repository ${name}`, notFound(`Repository ${name} not found (or not accessible)`));
  const defaultBranch = repository?.default_branch ?? 'main';
  const owner = repository?.owner?.login ?? locator.owner;
  const repo = repository?.name ?? locator.repo;
  const candidates: Array<{ ref: string; path: string }> = [];
  if (locator.refAndPath) {
    const segments = locator.refAndPath.split('/').filter(Boolean);
    for (let length = segments.length; length >= 1; length -= 1) candidates.push({ ref: segments.slice(0, length).join('/'), path: segments.slice(length).join('/') });
  } else {
    candidates.push({ ref: defaultBranch, path: '' });
  }
  for (const candidate of candidates) {
    const commit = await getJson<{ sha?: string }>(ctx, `${base}${repoPath(locator)}/commits/${encodeURIComponent(candidate.ref)}`, `ref ${candidate.ref} of ${name}`, soft);
    if (commit?.sha) return { owner, repo, hostname: webHostname(base), ref: candidate.ref, commit: commit.sha, path: candidate.path, defaultBranch };
  }
  throw new PluginError(422, 'skill_source_not_found', `No branch, tag or commit of ${name} matches ${locator.refAndPath ?? defaultBranch}`);
}

interface TreeEntry { path: string; type: string; size?: number }

/** The skills under the resolved path at the pinned commit, each with its files' contents. */
export async function fetchRepositorySkills(ctx: SkillsContext, locator: GithubLocator, resolved: ResolvedRepository, warnings: string[]): Promise<FetchedSkill[]> {
  const base = apiBase(ctx);
  const name = `${resolved.owner}/${resolved.repo}`;
  const tree = await getJson<{ tree?: TreeEntry[]; truncated?: boolean }>(ctx, `${base}${repoPath(locator)}/git/trees/${resolved.commit}?recursive=1`, `the tree of ${name}`, notFound(`The tree of ${name} at ${resolved.commit} was not found`));
  if (tree?.truncated) warnings.push(`${name}: the repository tree is larger than the API lists at once; some skills may be missing`);
  const blobs = (tree?.tree ?? []).filter((entry) => entry.type === 'blob');
  let scope = resolved.path.replace(/\/+$/, '');
  if (locator.blob) {
    if (!scope.endsWith(SKILL_FILE)) throw new PluginError(422, 'skill_source_invalid', `A blob URL must point at a ${SKILL_FILE} (got ${scope || 'the repository root'})`);
    scope = scope === SKILL_FILE ? '' : scope.slice(0, -(SKILL_FILE.length + 1));
  }
  const inScope = (path: string) => scope === '' || path === scope || path.startsWith(`${scope}/`);
  let skillDirs = blobs.filter((entry) => inScope(entry.path) && (entry.path === SKILL_FILE || entry.path.endsWith(`/${SKILL_FILE}`)))
    .map((entry) => (entry.path === SKILL_FILE ? '' : entry.path.slice(0, -(SKILL_FILE.length + 1))));
  if (locator.blob) skillDirs = skillDirs.filter((dir) => dir === scope);
  if (locator.skill) {
    const wanted = toSlug(locator.skill);
    const byFolder = skillDirs.filter((dir) => toSlug(dir.split('/').pop() ?? '') === wanted);
    if (byFolder.length > 0) skillDirs = byFolder;
  }
  if (skillDirs.length === 0) throw new PluginError(422, 'skill_source_empty', `No ${SKILL_FILE} found in ${name}${scope ? `/${scope}` : ''} at ${resolved.ref}`);
  if (skillDirs.length > MAX_TREE_SKILLS) throw new PluginError(422, 'skill_source_too_large', `${name} holds more than ${MAX_TREE_SKILLS} skills; import a narrower path`);
  const skills: FetchedSkill[] = [];
  for (const dir of skillDirs.sort()) {
    const prefix = dir === '' ? '' : `${dir}/`;
    // A skill nested inside this one is its own skill, not part of this one's files.
    const nested = skillDirs.filter((other) => other !== dir && (dir === '' || other.startsWith(prefix)));
    const entries = blobs.filter((entry) => entry.path.startsWith(prefix) && !nested.some((other) => entry.path.startsWith(`${other}/`)));
    const files: SourceFile[] = [];
    for (const entry of entries) {
      const relative = entry.path.slice(prefix.length);
      if (dir === '' && relative !== SKILL_FILE && !/^(references|scripts|assets)\//.test(relative)) continue;
      files.push(await fetchFile(ctx, locator, resolved, entry));
    }
    const folderName = dir === '' ? resolved.repo : dir.split('/').pop()!;
    const folder = readSkillFolder(files.map((file) => ({ ...file, path: file.path.slice(prefix.length) })), folderName, dir === '' ? 'project_root' : 'full', `${name}/${dir || SKILL_FILE}`);
    if ('error' in folder) { warnings.push(folder.error); continue; }
    warnings.push(...folder.warnings);
    skills.push({ folder, path: dir });
  }
  if (locator.skill && skills.length > 1) {
    const wanted = toSlug(locator.skill);
    const bySlug = skills.filter((skill) => skill.folder.shape.slug === wanted);
    if (bySlug.length === 0) throw new PluginError(422, 'skill_source_not_found', `No skill named ${locator.skill} in ${name}`);
    return bySlug;
  }
  return skills;
}

/** Raw contents through the contents API (base64), so binary assets arrive intact. */
async function fetchFile(ctx: SkillsContext, locator: GithubLocator, resolved: ResolvedRepository, entry: TreeEntry): Promise<SourceFile> {
  const size = entry.size ?? 0;
  if (size > MAX_SKILL_FILE_BYTES) return { path: entry.path, encoding: 'utf8', content: null, size };
  const path = entry.path.split('/').map(encodeURIComponent).join('/');
  const file = await getJson<{ content?: string; encoding?: string }>(ctx, `${apiBase(ctx)}${repoPath(locator)}/contents/${path}?ref=${resolved.commit}`, entry.path, notFound(`${entry.path} vanished from ${resolved.owner}/${resolved.repo}`));
  if (!file || file.encoding !== 'base64' || typeof file.content !== 'string') return { path: entry.path, encoding: 'utf8', content: null, size: MAX_SKILL_FILE_BYTES + 1 };
  const bytes = decodeBase64(file.content);
  const text = utf8Text(bytes);
  return text === null
    ? { path: entry.path, encoding: 'base64', content: file.content.replace(/\s/g, ''), size: bytes.length }
    : { path: entry.path, encoding: 'utf8', content: text, size: bytes.length };
}
