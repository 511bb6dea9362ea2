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

/** The payload type a declaration carries. */
export type PayloadOf<Declaration> = Declaration extends EventDeclaration<string, infer Payload> ? Payload : never;

/** Name -> payload of a list of declarations. */
export type PayloadsOf<Declarations extends readonly EventDeclaration[]> = {
  [Declaration in Declarations[number] as Declaration['name']]: PayloadOf<Declaration>;
};

/**
 * A kernel event: `kernelEvent<Payload>()('run.closed')`. Its payload is a TypeScript type
 * (the kernel writes it; no plugin can publish a kernel event).
 */
export function kernelEvent<Payload>() {
  return <const Name extends string>(name: Name, description?: string): EventDeclaration<Name, Payload> =>
    ({ name, publisher: 'kernel', ...(description ? { description } : {}) });
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
