import { isDeepStrictEqual } from 'node:util';
import type { PluginManifest } from '../plugin/manifest.ts';
import { PLUGIN_EVENTS } from '../events/plugin-events.ts';
import type { EventDeclaration } from '../events/define.ts';

const DECLARED: ReadonlyMap<string, EventDeclaration> = new Map(PLUGIN_EVENTS.map((event) => [event.name, event]));
const DECLARED_PUBLISHERS: ReadonlySet<string> = new Set(PLUGIN_EVENTS.map((event) => event.publisher));

/**
 * A plugin whose events the SDK declares (sdk/events: the events other plugins subscribe to,
 * typed from their declaration) publishes exactly those: each under publishedEvents with the
 * declaration's description and schema, so the schema the kernel checks a publish against and
 * the payload type its subscribers compile against cannot drift apart. `keel plugin build`,
 * the test host and install all refuse a plugin.json that says otherwise.
 */
export function declaredEventIssues(manifest: PluginManifest): Array<{ path: string; message: string }> {
  const issues: Array<{ path: string; message: string }> = [];
  const published = manifest.publishedEvents ?? [];
  for (const [index, event] of published.entries()) {
    const declaration = DECLARED.get(event.name);
    if (!declaration) {
      // Its subscribers check their names against the declarations (subscription-names.ts): an event beside them would be refused to them.
      if (DECLARED_PUBLISHERS.has(manifest.key)) issues.push({ path: `publishedEvents.${index}.name`, message: `is not declared in sdk/events, which declares the events ${manifest.key} publishes; declare it there first` });
      continue;
    }
    if (declaration.publisher !== manifest.key) continue;
    if (event.description !== declaration.description || !isDeepStrictEqual(event.schema, declaration.schema)) {
      issues.push({ path: `publishedEvents.${index}`, message: `differs from the declaration of ${event.name} in sdk/events; declare its description and schema as the SDK does` });
    }
  }
  for (const declaration of DECLARED.values()) {
    if (declaration.publisher !== manifest.key || published.some((event) => event.name === declaration.name)) continue;
    issues.push({ path: 'publishedEvents', message: `must declare ${declaration.name}, which sdk/events declares as published by ${manifest.key}` });
  }
  return issues;
}
