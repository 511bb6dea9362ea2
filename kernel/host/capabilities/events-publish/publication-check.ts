import type { PublishedEventManifest } from '../../../../sdk/plugin/manifest.ts';
import { KERNEL_EVENTS } from '../../../../sdk/events/kernel-events.ts';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../../../sdk/manifest/plugin-schema-ajv.ts';
import { CapabilityError } from '../../worker/capabilities/types.ts';

/** Largest published payload, as JSON text. */
export const MAX_EVENT_PAYLOAD_CHARS = 64 * 1024;
const ENTITY_TYPE = /^[a-z][a-z0-9_.-]{0,63}$/;
const MAX_ENTITY_ID = 200;

export interface CheckedPublication { name: string; entityType: string; entityId: string; payload: Record<string, unknown> }

/** What the worker knows of a plugin's events: its key and the events its manifest declares (WorkerInit.publishedEvents). */
export interface Publisher { key: string; publishedEvents: readonly Pick<PublishedEventManifest, 'name' | 'schema'>[] }

/**
 * Whether `publisher` may publish this event: the name is under its own key and declared under
 * `publishedEvents`, the payload matches the declared schema, the entity is named. Kernel
 * events are the kernel's alone: a plugin that names one (or another plugin's) is refused,
 * since a forged `agent.created` or `work.issue.assigned` could start paid work elsewhere.
 * Declared schemas are plugin-written, so they are compiled as every plugin schema is, with
 * RE2 for their patterns (plugin-schema-ajv.ts), and defaults are filled in.
 */
export function checkPublication(publisher: Publisher, args: unknown[]): CheckedPublication {
  const [name, payload, options] = args as [unknown, unknown, { entityType?: unknown; entityId?: unknown } | null | undefined];
  const plugin = publisher.key;
  if (typeof name !== 'string' || name.length === 0 || name.length > 128) throw refused({ status: 400, code: 'invalid_arguments', message: 'events.publish needs an event name (1-128 characters)' });
  if (!name.startsWith(`${plugin}.`)) {
    const whose = KERNEL_EVENTS.some((event) => event.name === name) ? 'a kernel event, which only the kernel publishes' : `not under ${plugin}.*`;
    throw refused({ status: 403, code: 'event_name_forbidden', message: `${plugin} may publish only events named ${plugin}.<name>; ${name} is ${whose}` });
  }
  const declared = publisher.publishedEvents.find((event) => event.name === name);
  if (!declared) throw refused({ status: 403, code: 'event_not_declared', message: `${plugin}: ${name} is not declared under publishedEvents in plugin.json; declare it with its payload schema and upgrade the plugin` });
  if (!isJsonObject(payload)) throw refused({ status: 400, code: 'invalid_event_payload', message: `${name}: the payload must be a JSON object` });
  if (JSON.stringify(payload).length > MAX_EVENT_PAYLOAD_CHARS) throw refused({ status: 413, code: 'invalid_event_payload', message: `${name}: the payload is larger than ${MAX_EVENT_PAYLOAD_CHARS} characters of JSON` });
  const entityType = options?.entityType;
  const entityId = options?.entityId;
  if (typeof entityType !== 'string' || !ENTITY_TYPE.test(entityType)) throw refused({ status: 400, code: 'invalid_arguments', message: `${name}: options.entityType must match ${ENTITY_TYPE.source} (events of one entity are delivered in order)` });
  if (typeof entityId !== 'string' || entityId.length === 0 || entityId.length > MAX_ENTITY_ID) throw refused({ status: 400, code: 'invalid_arguments', message: `${name}: options.entityId must be 1-${MAX_ENTITY_ID} characters` });
  const issues = schemaIssues(pluginBodyAjv, declared.schema, payload, '(payload)');
  if (issues.length) throw refused({ status: 400, code: 'invalid_event_payload', message: `${name}: ${describeIssues('event payload', issues)}` });
  return { name, entityType, entityId, payload };
}

/**
 * A refusal as the wire error it travels as (the worker answers the call with it, the host
 * turns it into the API's error body): written as `{ status, code, message }` so that the error
 * catalog's test (test/kernel/error-catalog.test.ts) reads its code like the kernel's own.
 */
function refused(error: { status: number; code: string; message: string }): CapabilityError {
  return new CapabilityError(error.status, error.code, error.message);
}

/** A payload the isolate handed over as plain data (wire-json.ts): an object that is not an array is a JSON object. */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
