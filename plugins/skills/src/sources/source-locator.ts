import { parseUrl } from './url-parts.ts';
/**
 * What an import `source` string names (pure). Repository forms keep the text after
 * `tree/` or `blob/` unsplit: a ref may contain `/`, so which part is the ref is decided
 * against the repository's refs (github-import.ts), longest match first.
 */
export type SourceLocator =
  | {
    form: 'github';
    owner: string;
    repo: string;
    /** `tree/<ref>/<path>` or `blob/<ref>/<file>` text after the keyword, unsplit. */
    refAndPath: string | null;
    blob: boolean;
    /** `owner/repo/skill` and skill-directory forms: the skill's name (slug or folder). */
    skill: string | null;
    /** `github` for repository forms, `skills_sh` when it came through the skill directory. */
    sourceKind: 'github' | 'skills_sh';
    original: string;
  }
  | { form: 'url'; url: string; original: string }
  | { form: 'local'; path: string; original: string };

export class SourceError extends Error {}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SourceError('The source URL has an invalid percent escape');
  }
}

const NAME = /^[A-Za-z0-9_.-]+$/;
const SKILL_DIRECTORY_HOSTS = new Set(['skills.sh', 'www.skills.sh']);

export function parseSource(raw: string): SourceLocator {
  const original = raw;
  const source = raw.trim();
  if (source === '') throw new SourceError('Skill source is empty');
  if (source.startsWith('/') || source.startsWith('file://')) {
    const path = source.startsWith('file://') ? decodeURIComponent(source.slice('file://'.length)) : source;
    return { form: 'local', path, original };
  }
  const command = installCommand(source);
  if (command) return { ...command, original };
  if (/^https?:\/\//i.test(source) || /^(github\.com|skills\.sh|www\.skills\.sh)\//i.test(source)) {
    return fromUrl(/^https?:\/\//i.test(source) ? source : `https://${source}`, original);
  }
  const parts = source.replace(/\.git$/, '').split('/');
  if ((parts.length === 2 || parts.length === 3) && parts.every((part) => NAME.test(part) && part !== '.' && part !== '..')) {
    return { form: 'github', owner: parts[0]!, repo: parts[1]!, refAndPath: null, blob: false, skill: parts[2] ?? null, sourceKind: 'github', original };
  }
  throw new SourceError(`Unrecognised skill source: ${source.slice(0, 200)}`);
}

function fromUrl(text: string, original: string): SourceLocator {
  const url = parseUrl(text);
  if (!url) throw new SourceError(`Invalid skill source URL: ${text.slice(0, 200)}`);
  if (url.hasCredentials) throw new SourceError('Skill source URLs may not carry credentials');
  const host = url.hostname.toLowerCase();
  const segments = url.pathname.split('/').filter(Boolean).map(decodeSegment);
  if (host === 'github.com' || host === 'www.github.com') {
    if (segments.length < 2) throw new SourceError('A GitHub URL must name a repository (https://github.com/<owner>/<repo>)');
    const [owner, repoRaw, keyword, ...rest] = segments;
    const repo = repoRaw!.replace(/\.git$/, '');
    if (!NAME.test(owner!) || !NAME.test(repo)) throw new SourceError('A GitHub URL must name a repository (https://github.com/<owner>/<repo>)');
    if (keyword === undefined) return { form: 'github', owner: owner!, repo, refAndPath: null, blob: false, skill: null, sourceKind: 'github', original };
    if ((keyword === 'tree' || keyword === 'blob') && rest.length > 0) {
      return { form: 'github', owner: owner!, repo, refAndPath: rest.join('/'), blob: keyword === 'blob', skill: null, sourceKind: 'github', original };
    }
    throw new SourceError('A GitHub URL must be a repository, tree/<ref> or blob/<ref> address');
  }
  if (SKILL_DIRECTORY_HOSTS.has(host)) {
    const [owner, repo, skill] = segments;
    if (!owner || !repo || !NAME.test(owner) || !NAME.test(repo) || (skill !== undefined && !NAME.test(skill))) {
      throw new SourceError('A skill directory URL must name <owner>/<repo>[/<skill>]');
    }
    return { form: 'github', owner, repo, refAndPath: null, blob: false, skill: skill ?? null, sourceKind: 'skills_sh', original };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new SourceError('Skill source URLs must be http or https');
  if (!/\.md$/i.test(url.pathname)) throw new SourceError('A raw skill URL must point at a SKILL.md file');
  return { form: 'url', url: url.href, original };
}

/**
 * The skill directory's install command (`npx skills add <repo> [--skill <name>]`, also through
 * pnpm dlx, bunx, yarn dlx): unwrapped to the repository it names.
 */
function installCommand(source: string): Omit<Extract<SourceLocator, { form: 'github' }>, 'original'> | null {
  const match = /^(?:npx(?:\s+-y)?|pnpm\s+dlx|bunx|yarn\s+dlx)\s+skills(?:@\S+)?\s+add\s+(.+)$/i.exec(source);
  if (!match) return null;
  const words = match[1]!.trim().split(/\s+/);
  let target: string | null = null;
  let skill: string | null = null;
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    if (word === '--skill' || word === '-s') { skill = words[index + 1] ?? null; index += 1; continue; }
    if (word.startsWith('--skill=')) { skill = word.slice('--skill='.length); continue; }
    if (word.startsWith('-')) continue;
    target ??= word;
  }
  if (!target) throw new SourceError('The install command names no repository');
  const inner = parseSource(target);
  if (inner.form !== 'github') throw new SourceError('The install command must name a GitHub repository');
  if (skill !== null && !NAME.test(skill)) throw new SourceError('The install command names an invalid skill');
  const { original: _original, ...rest } = inner;
  return { ...rest, skill: skill ?? inner.skill, sourceKind: 'skills_sh' };
}
