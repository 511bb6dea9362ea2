import type { UiContributions } from '@keel/sdk/client';
import { api } from '../api.ts';
import { Icon } from '../icons.tsx';
import { Link } from '../router.tsx';
import { SlotFrame } from '../slots.tsx';
import { ErrorNote, Loading, useLoad } from '../ui.tsx';

type PageContribution = UiContributions['pages'][number];

/**
 * Plugin pages (`ui.pages`) live under the company on screen, at
 * `/companies/{companyId}/pages/{pluginKey}{page.path}`, and render in the same sandboxed frame
 * as slots: the page's content is its plugin's data handler named by the page's key.
 */
export function pluginPagePath(companyId: string, page: PageContribution): string {
  return `/companies/${companyId}/pages/${encodeURIComponent(page.pluginKey)}${page.path === '/' ? '' : page.path}`;
}

const PAGE_PATH = /^\/companies\/([^/?]+)\/pages\/([^/?]+)(\/[^?]*)?(\?.*)?$/;

/** A console path that names a plugin page: the company, the plugin and the page's own path. */
export function matchPluginPage(path: string): { companyId: string; pluginKey: string; pagePath: string } | null {
  const found = PAGE_PATH.exec(path);
  if (!found) return null;
  return { companyId: decodeURIComponent(found[1]!), pluginKey: decodeURIComponent(found[2]!), pagePath: trimSlash(found[3] ?? '/') };
}

const trimSlash = (path: string) => (path.length > 1 ? path.replace(/\/+$/, '') || '/' : path);

/** The nav entries of enabled plugins' pages; asked again on each navigation, so a disabled plugin's page leaves the menu. */
export function PluginPageLinks({ companyId, path }: { companyId: string; path: string }) {
  const contributions = useLoad(() => api.uiContributions(), [path]);
  return (
    <>
      {(contributions.data?.pages ?? []).map((page) => {
        const to = pluginPagePath(companyId, page);
        return <li key={`${page.pluginKey}/${page.key}`}><Link to={to} aria-current={trimSlash(path.split('?')[0]!) === trimSlash(to) ? 'page' : undefined}><Icon name="pages" />{page.title}</Link></li>;
      })}
    </>
  );
}

/** One plugin page: its title, and its content in a sandboxed frame fed by the page's data handler. */
export function PluginPageView({ companyId, pluginKey, pagePath }: { companyId: string; pluginKey: string; pagePath: string }) {
  const contributions = useLoad(() => api.uiContributions(), [pluginKey, pagePath]);
  if (contributions.loading && !contributions.data) return <Loading what="the plugin page" />;
  if (contributions.error) return <section><h1>Plugin page</h1><ErrorNote error={contributions.error} /></section>;
  const page = contributions.data?.pages.find((entry) => entry.pluginKey === pluginKey && trimSlash(entry.path) === pagePath);
  if (!page) {
    return (
      <section>
        <h1>Not found</h1>
        <p>No enabled plugin has a page here: plugin {pluginKey} is not enabled or has no page at {pagePath}. <Link to="/plugins">Plugins</Link></p>
      </section>
    );
  }
  return (
    <section className="plugin-page">
      <h1>{page.title}</h1>
      <SlotFrame key={`${page.pluginKey}/${page.key}/${companyId}`} pluginKey={page.pluginKey} dataKey={page.key} label={page.title} companyId={companyId} />
    </section>
  );
}
