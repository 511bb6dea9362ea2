import type { ExecutionFinishedEvent, ExecutionOutputEvent } from './execution-events.ts';
import type { ProxyFinishedEvent } from '../plugin/answers.ts';
import type { AgentJson, Company } from '../shared/principal-json.ts';
import { about, kernelEvent } from './define.ts';

/** Who made the change an event reports. */
export type EventActor = { actorType: 'agent' | 'user' | 'system'; actorId: string };

/**
 * The kernel's events: what the kernel emits (kernel/events/event-bus.ts types `emit` from
 * these) and what a plugin's `events` subscribes to, with the payload it receives.
 */
export const companyCreated = /* @__PURE__ */ kernelEvent<{ companyId: string; company: Company; actor: EventActor }>()('company.created', about('company', 'companyId'));
export const companyUpdated = /* @__PURE__ */ kernelEvent<{ companyId: string; company: Company; changes: Record<string, unknown>; actor: EventActor }>()('company.updated', about('company', 'companyId'));
export const companyStatusChanged = /* @__PURE__ */ kernelEvent<{ companyId: string; from: string; to: string; reason: string | null; actor: EventActor }>()('company.status_changed', about('company', 'companyId'));
export const companyArchived = /* @__PURE__ */ kernelEvent<{ companyId: string; actor: EventActor }>()('company.archived', about('company', 'companyId'));
export const companyDeleted = /* @__PURE__ */ kernelEvent<{ companyId: string; actor: EventActor }>()('company.deleted', about('company', 'companyId'));
export const agentCreated = /* @__PURE__ */ kernelEvent<{ companyId: string; agentId: string; agent: AgentJson; actor: EventActor }>()('agent.created', about('agent', 'agentId'));
export const agentUpdated = /* @__PURE__ */ kernelEvent<{ companyId: string; agentId: string; agent: AgentJson; changes: Record<string, unknown>; actor: EventActor }>()('agent.updated', about('agent', 'agentId'));
export const agentStatusChanged = /* @__PURE__ */ kernelEvent<{ companyId: string; agentId: string; from: string; to: string; reason: string | null; actor: EventActor }>()('agent.status_changed', about('agent', 'agentId'));
/** The board is asked to decide something; `approval` names who asked (requestedByAgentId, requestedByUserId). */
export const approvalCreated = /* @__PURE__ */ kernelEvent<{ companyId: string; approvalId: string; approval: Record<string, unknown>; actor: EventActor }>()('approval.created', about('approval', 'approvalId'));
/** The board decided (`to`: approved, rejected, revision_requested), or terminating the hired agent cancelled it. */
export const approvalDecided = /* @__PURE__ */ kernelEvent<{ companyId: string; approvalId: string; approval: Record<string, unknown>; from: string; to: string; decisionNote: string | null; actor: EventActor }>()('approval.decided', about('approval', 'approvalId'));
export const runClosed = /* @__PURE__ */ kernelEvent<{ companyId: string; runId: string; agentId: string; status: string; reason: string | null }>()('run.closed', about('run', 'runId'));
/** An agent's structured output lines or SSE events; delivered only to the plugin that started the execution. */
export const executionOutput = /* @__PURE__ */ kernelEvent<ExecutionOutputEvent>()('execution.output', about('execution', 'executionId'));
/** An execution reached its terminal status; delivered only to the plugin that started it. */
export const executionFinished = /* @__PURE__ */ kernelEvent<ExecutionFinishedEvent>()('execution.finished', about('execution', 'executionId'));
/** A proxied model call ended (kernel/gateway/); delivered only to the plugin that answered the proxy. */
export const proxyFinished = /* @__PURE__ */ kernelEvent<ProxyFinishedEvent>()('proxy.finished', about('proxied_call', 'callId'));

/**
 * Every kernel event, by name: the manifest schema's list of kernel event names is derived from
 * it, and the kernel finds an event's declaration (its entity) by its name here.
 */
export const KERNEL_EVENTS_BY_NAME = {
  [companyCreated.name]: companyCreated, [companyUpdated.name]: companyUpdated, [companyStatusChanged.name]: companyStatusChanged,
  [companyArchived.name]: companyArchived, [companyDeleted.name]: companyDeleted,
  [agentCreated.name]: agentCreated, [agentUpdated.name]: agentUpdated, [agentStatusChanged.name]: agentStatusChanged,
  [approvalCreated.name]: approvalCreated, [approvalDecided.name]: approvalDecided, [runClosed.name]: runClosed,
  [executionOutput.name]: executionOutput, [executionFinished.name]: executionFinished, [proxyFinished.name]: proxyFinished,
} as const;

/** Every kernel event, in declaration order. */
export const KERNEL_EVENTS = /* @__PURE__ */ Object.values(KERNEL_EVENTS_BY_NAME);
