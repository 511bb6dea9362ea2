import type { FromSchema, JSONSchema } from 'json-schema-to-ts';

/**
 * An event, declared once: its name, who publishes it and its payload's type. The publisher
 * (the kernel's EventBus, a plugin's ctx.events.publish) and every subscriber (definePlugin's
 * `events`, the kernel's own observers) read the payload type from this one declaration, so
 * they cannot disagree at compile time. The declaration is the key: `[runClosed.name]: handler`
 * in a subscriber and `publish(issueCreated.name, ...)` in a publisher name the same object.
 */
export interface EventDeclaration<Name extends string = string, Payload = unknown> {
  readonly name: Name;
  /** 'kernel', or the key of the plugin that publishes it. */
  readonly publisher: string;
  /**
   * A plugin event's payload schema, which the publisher's plugin.json declares under
   * `publishedEvents` (`keel plugin build` refuses a plugin.json that says otherwise) and the
   * kernel checks every publish against.
   */
  readonly schema?: JSONSchema;
  readonly description?: string;
  /** The payload's type; only ever read as a type (`PayloadOf`), never set. */
  readonly payloadType?: Payload;
}

/**
 * What a kernel event is about: one publisher's events of one entity reach each subscriber in
 * commit order (the outbox's entity columns).
 */
export interface EventEntity { readonly type: string; readonly id: string }

/** A kernel event's declaration: it also names how its entity is read from its payload. */
export interface KernelEventDeclaration<Name extends string = string, Payload = unknown> extends EventDeclaration<Name, Payload> {
  readonly entity: (payload: Payload) => EventEntity;
}

/**
 * The entity of a payload whose `key` holds the id: `about('agent', 'agentId')`. A payload
 * without that string member does not compile against it. Marked free of side effects, so a
 * plugin's bundle drops the declarations it does not name.
 */
/* @__NO_SIDE_EFFECTS__ */
export function about<const Key extends string>(type: string, key: Key) {
  return <Payload extends { readonly [K in Key]: string }>(payload: Payload): EventEntity => ({ type, id: payload[key] });
}

/** The payload type a JSON schema describes (what a plugin.gen.ts derives its own events' payloads with). */
export type PayloadOfSchema<Schema extends JSONSchema> = FromSchema<Schema>;

/** The payload type a declaration carries. */
export type PayloadOf<Declaration> = Declaration extends EventDeclaration<string, infer Payload> ? Payload : never;

/** Name -> payload of a list of declarations. */
export type PayloadsOf<Declarations extends readonly EventDeclaration[]> = {
  [Declaration in Declarations[number] as Declaration['name']]: PayloadOf<Declaration>;
};

/**
 * A kernel event: `kernelEvent<Payload>()('run.closed', about('run', 'runId'))`. Its payload is
 * a TypeScript type (the kernel writes it; no plugin can publish a kernel event), and `entity`
 * reads what it is about from the payload (the kernel's EventBus appends it with that entity).
 */
export function kernelEvent<Payload>() {
  return <const Name extends string>(name: Name, entity: (payload: Payload) => EventEntity, description?: string): KernelEventDeclaration<Name, Payload> =>
    ({ name, publisher: 'kernel', entity, ...(description ? { description } : {}) });
}

/**
 * A plugin's event that other plugins subscribe to: its payload type is derived from its JSON
 * schema (json-schema-to-ts), the schema its plugin.json publishes and the kernel checks.
 */
export function pluginEvent<const Name extends string, const Schema extends JSONSchema>(
  declaration: { name: Name; publisher: string; description: string; schema: Schema },
): EventDeclaration<Name, FromSchema<Schema>> & { readonly schema: Schema } {
  return declaration;
}
