import { parseUrl } from './url-parts.ts';
import { PluginError } from '@keel/sdk/plugin';
import type { SkillsContext } from '../context.ts';
import { looksBinary } from '../skill-file/bytes.ts';
import { MAX_SKILL_FILE_BYTES } from '../skill-file/inventory.ts';
import { readSkillFolder, type SkillFolder } from '../skill-file/skill-folder.ts';

/** The repository a raw.githubusercontent.com address belongs to (owner, repo, ref, path), when it is one. */
export function rawGithubParts(url: string): { owner: string; repo: string; ref: string; path: string } | null {
  const parsed = parseUrl(url);
  if (!parsed || parsed.hostname !== 'raw.githubusercontent.com') return null;
  const [owner, repo, ref, ...rest] = parsed.pathname.split('/').filter(Boolean);
  return owner && repo && ref ? { owner, repo, ref, path: rest.join('/') } : null;
}

/** A single SKILL.md fetched from its raw address: the skill is that file alone. */
export async function fetchRawSkill(ctx: SkillsContext, url: string): Promise<SkillFolder> {
  let response;
  try {
    response = await ctx.http.fetch(url, { headers: { Accept: 'text/markdown, text/plain, */*', 'User-Agent': 'keel-skills' } });
  } catch (error) {
    const code = (error as PluginError).code;
    if (code === 'network_denied' || code === 'address_denied') throw new PluginError(422, 'skill_source_not_allowed', `Skills cannot be fetched from ${parseUrl(url)?.host ?? url}: it is not an allowed host`);
    throw new PluginError(502, 'skill_source_unreachable', `Could not fetch ${url}: ${(error as Error).message}`);
  }
  if (response.status === 404) throw new PluginError(422, 'skill_source_not_found', `Nothing found at ${url}`);
  if (response.status < 200 || response.status >= 300) throw new PluginError(502, 'skill_source_failed', `${url} answered ${response.status}`);
  if (response.body.length > MAX_SKILL_FILE_BYTES) throw new PluginError(422, 'skill_file_too_large', `${url} is larger than ${MAX_SKILL_FILE_BYTES} bytes`);
  if (looksBinary(response.body)) throw new PluginError(422, 'skill_file_not_text', `${url} is not a text file`);
  const segments = (parseUrl(url)?.pathname ?? '').split('/').filter(Boolean);
  const folderName = segments.length >= 2 ? segments[segments.length - 2]! : null;
  const folder = readSkillFolder([{ path: 'SKILL.md', encoding: 'utf8', content: response.body, size: response.body.length }], folderName, 'full', url);
  if ('error' in folder) throw new PluginError(422, 'skill_source_invalid', folder.error);
  return folder;
}
