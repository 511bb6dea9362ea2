/**
 * The plugin manifest (`plugin.json`): static data the host reads before running a line of
 * plugin code. Its JSON schema (sdk/manifest/fragments.ts, one fragment per contribution point)
 * is the one declaration: it is published at `GET /api/plugins/manifest-schema`, it validates
 * every manifest, and the types below are derived from it by json-schema-to-ts's `FromSchema`
 * (types only: nothing of the library reaches a bundle). A property added to a fragment is a
 * property of these types; what each one means is its `description` in the schema.
 */
import type { FromSchema } from 'json-schema-to-ts';
import type { manifestSchema } from '../manifest/fragments.ts';

/** A JSON schema a plugin declares (a route body, a tool input, an event payload...). */
export type JsonSchema = Record<string, unknown>;

/** `plugin.json`, as the manifest schema admits it. */
export type PluginManifest = FromSchema<typeof manifestSchema>;

type Item<List> = NonNullable<List> extends ReadonlyArray<infer Element> ? Element : never;

/** A capability the plugin asks for, with the reason shown to the operator on enable. */
export type CapabilityRequest = Item<PluginManifest['capabilities']>;
/** An HTTP route (`routes`). */
export type RouteManifest = Item<PluginManifest['routes']>;
export type RouteAuth = RouteManifest['auth'];
/** What a route may answer besides one JSON value (docs/plugins/answers.md). */
export type RouteResponseManifest = NonNullable<RouteManifest['response']>;
/** A route that may forward its request to a model provider (`respondProxy`, needs http.proxy). */
export type RouteProxyManifest = NonNullable<RouteManifest['proxy']>;
/** A table of the plugin whose rows belong to companies and are named in paths (`database.entities`). */
export type EntityManifest = Item<NonNullable<PluginManifest['database']>['entities']>;
export type ToolManifest = Item<PluginManifest['tools']>;
export type JobManifest = Item<PluginManifest['jobs']>;
export type WebhookManifest = Item<PluginManifest['webhooks']>;
/** A subscription: a kernel event or `<pluginKey>.<name>` of another plugin, after_commit or in_transaction. */
export type EventManifest = Item<PluginManifest['events']>;
/** An event the plugin publishes with ctx.events.publish (events.publish); `name` starts with the plugin's key. */
export type PublishedEventManifest = Item<PluginManifest['publishedEvents']>;
export type UiSlotManifest = Item<NonNullable<PluginManifest['ui']>['slots']>;
export type UiLauncherManifest = Item<NonNullable<PluginManifest['ui']>['launchers']>;
export type FolderManifest = Item<PluginManifest['folders']>;
export type ServiceManifest = Item<NonNullable<PluginManifest['services']>['provides']>;
/** One provider's service (`plugin`, `service`), or a contract of this plugin's own (`contract`). */
export type ServiceConsumption = Item<NonNullable<PluginManifest['services']>['consumes']>;
/** An agent the host makes and keeps for each company while the plugin is enabled. */
export type ManagedAgentManifest = Item<NonNullable<PluginManifest['managed']>['agents']>;
