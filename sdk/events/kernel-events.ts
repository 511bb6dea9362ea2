import type { ExecutionFinishedEvent, ExecutionOutputEvent } from '../capabilities/executions.ts';
import type { ProxyFinishedEvent } from '../plugin/answers.ts';
import { kernelEvent } from './define.ts';

/** Who made the change an event reports. */
export type EventActor = { actorType: 'agent' | 'user' | 'system'; actorId: string };

/**
 * The kernel's events: what the kernel emits (kernel/events/event-bus.ts types `emit` from
 * these) and what a plugin's `events` subscribes to, with the payload it receives.
 */
export const companyCreated = /* @__PURE__ */ kernelEvent<{ companyId: string; company: Record<string, unknown>; actor: EventActor }>()('company.created');
export const companyUpdated = /* @__PURE__ */ kernelEvent<{ companyId: string; company: Record<string, unknown>; changes: Record<string, unknown>; actor: EventActor }>()('company.updated');
export const companyStatusChanged = /* @__PURE__ */ kernelEvent<{ companyId: string; from: string; to: string; reason: string | null; actor: EventActor }>()('company.status_changed');
export const companyArchived = /* @__PURE__ */ kernelEvent<{ companyId: string; actor: EventActor }>()('company.archived');
export const companyDeleted = /* @__PURE__ */ kernelEvent<{ companyId: string; actor: EventActor }>()('company.deleted');
export const agentCreated = /* @__PURE__ */ kernelEvent<{ companyId: string; agentId: string; agent: Record<string, unknown>; actor: EventActor }>()('agent.created');
export const agentUpdated = /* @__PURE__ */ kernelEvent<{ companyId: string; agentId: string; agent: Record<string, unknown>; changes: Record<string, unknown>; actor: EventActor }>()('agent.updated');
export const agentStatusChanged = /* @__PURE__ */ kernelEvent<{ companyId: string; agentId: string; from: string; to: string; reason: string | null; actor: EventActor }>()('agent.status_changed');
/** The board is asked to decide something; `approval` names who asked (requestedByAgentId, requestedByUserId). */
export const approvalCreated = /* @__PURE__ */ kernelEvent<{ companyId: string; approvalId: string; approval: Record<string, unknown>; actor: EventActor }>()('approval.created');
/** The board decided (`to`: approved, rejected, revision_requested), or terminating the hired agent cancelled it. */
export const approvalDecided = /* @__PURE__ */ kernelEvent<{ companyId: string; approvalId: string; approval: Record<string, unknown>; from: string; to: string; decisionNote: string | null; actor: EventActor }>()('approval.decided');
export const runClosed = /* @__PURE__ */ kernelEvent<{ companyId: string; runId: string; agentId: string; status: string; reason: string | null }>()('run.closed');
/** An agent's structured output lines or SSE events; delivered only to the plugin that started the execution. */
export const executionOutput = /* @__PURE__ */ kernelEvent<ExecutionOutputEvent>()('execution.output');
/** An execution reached its terminal status; delivered only to the plugin that started it. */
export const executionFinished = /* @__PURE__ */ kernelEvent<ExecutionFinishedEvent>()('execution.finished');
/** A proxied model call ended (kernel/gateway/); delivered only to the plugin that answered the proxy. */
export const proxyFinished = /* @__PURE__ */ kernelEvent<ProxyFinishedEvent>()('proxy.finished');

/** Every kernel event: the manifest schema's list of kernel event names is derived from it. */
export const KERNEL_EVENTS = [
  companyCreated, companyUpdated, companyStatusChanged, companyArchived, companyDeleted,
  agentCreated, agentUpdated, agentStatusChanged, approvalCreated, approvalDecided, runClosed,
  executionOutput, executionFinished, proxyFinished,
] as const;
