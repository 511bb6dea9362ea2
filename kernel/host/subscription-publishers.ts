import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { subscriptionNameIssues } from '../../sdk/manifest/subscription-names.ts';
import type { Database } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';

/**
 * A subscription to another plugin's event (`<pluginKey>.<name>`) is checked against that
 * plugin's manifest when it is installed: an event it does not declare under publishedEvents
 * can never be published (the kernel refuses an undeclared publish), so the subscription would
 * wait for nothing. Refused at install, upgrade and enable with 422 event_not_published. A
 * publisher that is not installed is not checked: a plugin may be installed before the plugin
 * whose events it receives. What the manifest alone decides (kernel events, the plugin's own
 * events, the events the SDK declares) is checked with it (sdk/manifest/subscription-names.ts,
 * 422 invalid_manifest), and again here for a manifest stored before that check.
 */
export async function assertSubscriptionsPublished(db: Pick<Database, 'query'>, manifest: Pick<PluginManifest, 'key' | 'events' | 'publishedEvents'>): Promise<void> {
  const unnamed = subscriptionNameIssues(manifest);
  if (unnamed.length) throw new KeelError(422, 'invalid_manifest', `Invalid manifest of ${manifest.key}: ${listed(unnamed)}`, { issues: unnamed });
  const named = (manifest.events ?? []).map((subscription, index) => ({ index, name: subscription.event, publisher: subscription.event.split('.')[0]! }))
    .filter((subscription) => subscription.publisher !== manifest.key);
  if (named.length === 0) return;
  const rows = await db.query<{ key: string; published: string[] }>(
    `select key, coalesce((select array_agg(event->>'name') from jsonb_array_elements(manifest->'publishedEvents') event), '{}') as published
       from plugins where key in (select jsonb_array_elements_text(?::jsonb))`, [JSON.stringify([...new Set(named.map((subscription) => subscription.publisher))])]);
  const installed = new Map(rows.map((row) => [row.key, row.published]));
  const issues = named.flatMap(({ index, name, publisher }) => {
    const published = installed.get(publisher);
    if (!published || published.includes(name)) return [];
    return [{ path: `events.${index}.event`, message: `'${name}' is not published by ${publisher}, which is installed and publishes ${published.length ? published.join(', ') : 'no events'}` }];
  });
  if (issues.length) throw new KeelError(422, 'event_not_published', `${manifest.key} subscribes to an event no plugin publishes: ${listed(issues)}`, { issues });
}

/** The first issue, and how many more: the refusal's text (every issue is in `issues`). */
function listed(issues: ReadonlyArray<{ path: string; message: string }>): string {
  return `${issues[0]!.path} ${issues[0]!.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`;
}
