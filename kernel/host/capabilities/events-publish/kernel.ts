import { eventsPublish as spec } from '../../../../sdk/capabilities/events.ts';
import type { PluginManifest } from '../../../../sdk/plugin/manifest.ts';
import { KeelError } from '../../../http/errors.ts';
import { KERNEL_EVENT_NAMES } from '../../../../sdk/manifest/fragments.ts';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../../../sdk/manifest/plugin-schema-ajv.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/** Largest published payload, as JSON text. */
export const MAX_EVENT_PAYLOAD_CHARS = 64 * 1024;
const ENTITY_TYPE = /^[a-z][a-z0-9_.-]{0,63}$/;
const MAX_ENTITY_ID = 200;

export interface CheckedPublication { name: string; entityType: string; entityId: string; payload: Record<string, unknown> }

/**
 * Whether `plugin` may publish this event: the name is under its own key and declared under
 * `publishedEvents`, the payload matches the declared schema, the entity is named. Kernel
 * events are the kernel's alone: a plugin that names one (or another plugin's) is refused,
 * since a forged `agent.created` or `work.issue.assigned` could start paid work elsewhere.
 */
export function checkPublication(plugin: string, manifest: PluginManifest, args: unknown[]): CheckedPublication {
  const [name, payload, options] = args as [unknown, unknown, { entityType?: unknown; entityId?: unknown } | null | undefined];
  if (typeof name !== 'string' || name.length === 0 || name.length > 128) throw new KeelError(400, 'invalid_arguments', 'events.publish needs an event name (1-128 characters)');
  if (!name.startsWith(`${plugin}.`)) {
    const whose = (KERNEL_EVENT_NAMES as readonly string[]).includes(name) ? 'a kernel event, which only the kernel publishes' : `not under ${plugin}.*`;
    throw new KeelError(403, 'event_name_forbidden', `${plugin} may publish only events named ${plugin}.<name>; ${name} is ${whose}`);
  }
  const declared = manifest.publishedEvents?.find((event) => event.name === name);
  if (!declared) throw new KeelError(403, 'event_not_declared', `${plugin}: ${name} is not declared under publishedEvents in plugin.json; declare it with its payload schema and upgrade the plugin`);
  if (!isJsonObject(payload)) throw new KeelError(400, 'invalid_event_payload', `${name}: the payload must be a JSON object`);
  if (JSON.stringify(payload).length > MAX_EVENT_PAYLOAD_CHARS) throw new KeelError(413, 'invalid_event_payload', `${name}: the payload is larger than ${MAX_EVENT_PAYLOAD_CHARS} characters of JSON`);
  const entityType = options?.entityType;
  const entityId = options?.entityId;
  if (typeof entityType !== 'string' || !ENTITY_TYPE.test(entityType)) throw new KeelError(400, 'invalid_arguments', `${name}: options.entityType must match ${ENTITY_TYPE.source} (events of one entity are delivered in order)`);
  if (typeof entityId !== 'string' || entityId.length === 0 || entityId.length > MAX_ENTITY_ID) throw new KeelError(400, 'invalid_arguments', `${name}: options.entityId must be 1-${MAX_ENTITY_ID} characters`);
  const issues = schemaIssues(pluginBodyAjv, declared.schema, payload, '(payload)');
  if (issues.length) throw new KeelError(400, 'invalid_event_payload', `${name}: ${describeIssues('event payload', issues)}`);
  return { name, entityType, entityId, payload };
}

/** A payload the isolate handed over as plain data (wire-json.ts): an object that is not an array is a JSON object. */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The kernel's half of `ctx.events.publish`: the worker asks here before it writes the event
 * in the invocation's transaction (worker.ts beside this file), because the declared
 * schemas are checked where every other plugin schema is, with the RE2-backed ajv. Not a
 * method plugins can call: the registry declares no `eventChecks`, so the worker refuses it to the isolate.
 */
const eventChecksCapability: KernelCapability<never, 'plugins'> = {
  methods: {
    check: {
      checkedAs: 'events.publish',
      run: async (call) => {
        const manifest = call.host.plugins.get(call.plugin)?.manifest;
        if (!manifest) throw new KeelError(404, 'plugin_not_enabled', `${call.plugin} is not enabled`);
        return checkPublication(call.plugin, manifest, call.args);
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, {
  uses: { host: ['plugins'] },
  internal: { eventChecks: eventChecksCapability.methods },
  bridgeFunctions: ['keel_bridge.publish_event(text, text, text, text, text, jsonb)', 'keel_bridge.publish_event(text, text, text, text, text, jsonb, uuid)'],
});
