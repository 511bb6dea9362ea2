/**
 * The one module plugin code imports (`@keel/sdk/plugin`). Everything a plugin can do goes
 * through `definePlugin` and the `ctx` it receives; nothing of the kernel is reachable.
 */
import './runtime.ts';

export { definePlugin, definePluginWith, type PluginDefinition, type EventHandlers, type JobHandlers } from './define-plugin.ts';
export { kernelEvents, workEvents, costsEvents, type EventDeclaration, type PayloadOf, type PayloadOfSchema, type EventActor, type EventPayload, type ManifestEventPayloads } from '../events/index.ts';
export { PluginError, type PluginValidationIssue } from './errors.ts';
export { fingerprint } from './fingerprint.ts';
export { createOnce, type KeyedCreate } from './idempotent-create.ts';
export { allOf } from './all-of.ts';
export type * from './context.ts';
export type * from './manifest.ts';
export { respondEvents, respondProxy, RAW_CONTENT_TYPES, METER_KINDS, type ServerSentEvent, type EventsAnswer, type RawContentType, type MeterKind, type ProxySpec, type ProxyAnswer, type ProxyCallStatus, type ProxyFinishedEvent } from './answers.ts';
export { priceFor, exactCents, callCents, type ModelPrice, type PriceRates, type MeteredUsage } from '../shared/model-prices.ts';
export { LOCAL_TOOLS, type LocalTool } from '../shared/local-tools.ts';

/**
 * A route answer with its own status and headers: `return respond(201, created)`. A plain
 * return value is sent as the body with the route's success status. On a route that declares
 * `response.contentTypes`, a string body is sent raw as the first declared type, or as the
 * declared type named by a `content-type` header here.
 */
export function respond(status: number, body?: unknown, headers?: Record<string, string>): { $response: { status: number; body?: unknown; headers?: Record<string, string> } } {
  return { $response: { status, body, headers } };
}

/** The adapter configuration keys `ctx.agents.setInstructionKeys` may write (agents.instructions). */
export { INSTRUCTION_KEY } from '../capabilities/kernel-data.ts';
/** Which variable names an environment may give its runs (applied again by the kernel at start). */
export { refusedRunVariable } from '../capabilities/run-variable-names.ts';
export type { ExecutionSummary } from '../capabilities/executions.ts';
export type { ExecutionFinishedEvent, ExecutionOutput, ExecutionOutputEvent } from '../events/execution-events.ts';
export type { WorkspaceProcessSummary, WorkspaceSecretRef } from '../capabilities/workspace-processes.ts';
