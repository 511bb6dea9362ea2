import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { sdkRoot } from '../sdk-root.ts';

/**
 * Links the bundled skills of the skills plugin's catalog (plugins/skills/catalog, kind
 * `bundled`) into the skill directories of local coding tools, so that an agent run by such a
 * tool on this machine has them. Idempotent: a link already pointing at the skill is left as it
 * is, a dangling link is replaced, and anything else at that name (the user's own folder or a
 * link elsewhere) is never touched, only reported.
 */
export interface LinkReport {
  /** The catalog the skills were linked from, or null when none is next to this CLI. */
  source: string | null;
  targets: Array<{ dir: string; linked: string[]; unchanged: string[]; skipped: Array<{ slug: string; reason: string }> }>;
  /** Why nothing was linked, when nothing could be. */
  note?: string;
}

/** The skills directories of the local tools: `$CLAUDE_CONFIG_DIR` or `~/.claude`, `$CODEX_HOME` or `~/.codex`. */
export function skillTargetDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  return [
    join(env.CLAUDE_CONFIG_DIR ? resolve(env.CLAUDE_CONFIG_DIR) : join(homedir(), '.claude'), 'skills'),
    join(env.CODEX_HOME ? resolve(env.CODEX_HOME) : join(homedir(), '.codex'), 'skills'),
  ];
}

/** The catalog of a Keel checkout (the SDK's parent); a packed SDK ships without it. */
function bundledCatalog(): { dir: string; slugs: string[] } | null {
  const dir = join(sdkRoot(), '..', 'plugins', 'skills', 'catalog');
  const file = join(dir, 'catalog.json');
  if (!existsSync(file)) return null;
  const catalog = JSON.parse(readFileSync(file, 'utf8')) as { skills?: Array<{ slug?: unknown; kind?: unknown }> };
  const slugs = (catalog.skills ?? []).filter((s) => s.kind === 'bundled' && typeof s.slug === 'string' && /^[a-z0-9][a-z0-9-]*$/.test(s.slug)).map((s) => s.slug as string);
  return { dir: join(dir, 'skills'), slugs: slugs.filter((slug) => existsSync(join(dir, 'skills', slug, 'SKILL.md'))).sort() };
}

export function linkBundledSkills(targetDirs: string[] = skillTargetDirs()): LinkReport {
  const catalog = bundledCatalog();
  if (!catalog) return { source: null, targets: [], note: 'No bundled skills next to this CLI (a Keel checkout has them in plugins/skills/catalog); nothing linked' };
  const targets = targetDirs.map((dir) => {
    const report = { dir, linked: [] as string[], unchanged: [] as string[], skipped: [] as Array<{ slug: string; reason: string }> };
    mkdirSync(dir, { recursive: true });
    for (const slug of catalog.slugs) {
      const source = join(catalog.dir, slug);
      const target = join(dir, slug);
      const existing = lstatOrNull(target);
      if (existing?.isSymbolicLink()) {
        const pointsAt = resolve(dirname(target), readlinkSync(target));
        if (pointsAt === source) { report.unchanged.push(slug); continue; }
        if (existsSync(target)) { report.skipped.push({ slug, reason: `${target} links to ${pointsAt}` }); continue; }
        unlinkSync(target); // dangling: a checkout that moved
      } else if (existing) {
        report.skipped.push({ slug, reason: `${target} exists and is not a link` });
        continue;
      }
      symlinkSync(source, target, 'dir');
      report.linked.push(slug);
    }
    return report;
  });
  return { source: catalog.dir, targets };
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
