/** The page title: frontmatter `title:`, else the first `# ` heading, else the file name. */
export function titleOf(path: string, content: string): string {
  const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(content);
  const fromFront = front && /^title:\s*["']?(.+?)["']?\s*$/m.exec(front[1]!);
  if (fromFront) return fromFront[1]!.slice(0, 300);
  const heading = /^#\s+(.+?)\s*#*\s*$/m.exec(content);
  if (heading) return heading[1]!.slice(0, 300);
  const base = path.split('/').pop()!;
  return base.replace(/\.md$/i, '');
}

export interface PageLink { targetPath: string | null; targetKey: string | null }

/** The key a [[wiki link]] names a page by: its file name without .md, lower-case. */
export function pageKey(path: string): string {
  return path.split('/').pop()!.replace(/\.md$/i, '').toLowerCase();
}

/**
 * Links of a page: `[[Target]]`, `[[Target|label]]`, `[[folder/target]]` and markdown links to
 * relative .md files (resolved against the page's folder; links leading out of wiki/ are
 * dropped). External links and anchors are not links between pages.
 */
export function linksOf(sourcePath: string, content: string): PageLink[] {
  const found = new Map<string, PageLink>();
  for (const match of content.matchAll(/\[\[([^\]|#\n]{1,300})(?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\]/g)) {
    const target = match[1]!.trim();
    if (!target) continue;
    const link: PageLink = target.includes('/')
      ? { targetPath: normalise(target.toLowerCase().endsWith('.md') ? target : `${target}.md`), targetKey: null }
      : { targetPath: null, targetKey: pageKey(target) };
    if (!link.targetPath && !link.targetKey) continue;
    found.set(`${link.targetPath}|${link.targetKey}`, link);
  }
  for (const match of content.matchAll(/\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const href = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('/')) continue;
    const path = decodeHref(href.split('#')[0]!);
    if (!path || !path.toLowerCase().endsWith('.md')) continue;
    const folder = sourcePath.split('/').slice(0, -1);
    const resolved = normalise([...folder, ...path.split('/')].join('/'));
    if (resolved) found.set(`${resolved}|null`, { targetPath: resolved, targetKey: null });
  }
  return [...found.values()];
}

function decodeHref(href: string): string | null {
  try { return decodeURIComponent(href); } catch { return null; }
}

/** Resolves `.` and `..`; null when the path leaves wiki/. */
function normalise(path: string): string | null {
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') { if (!out.length) return null; out.pop(); continue; }
    out.push(part);
  }
  return out.length ? out.join('/') : null;
}
