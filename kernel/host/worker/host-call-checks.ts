import { capabilityMethod } from '../../../sdk/capabilities/index.ts';
import { checkCapabilityCall, parseCallArguments, type CallRefusal } from '../../../sdk/capabilities/check-call.ts';
import { MAX_ARGS_CHARS, MAX_KERNEL_ARGS_CHARS } from '../../../sdk/plugin/wire-budget.ts';
import { jsonTooDeep, MAX_JSON_DEPTH } from './json-bounds.ts';

/** Host work one invocation may have in flight; a burst of un-awaited calls must not flood the kernel. */
const MAX_PENDING_OPS = 64;

/**
 * What a host call from the isolate must pass before any work starts: a declared method,
 * arguments within their size and depth, room among the invocation's calls in flight, and the
 * registry's check (sdk/capabilities: granted, in a company when it must be, arguments as
 * declared). Answers the refusal, or the parsed arguments and whether the kernel serves the method.
 */
export function checkHostCall(call: { plugin: string; grants: readonly string[]; companyId: string | null; pendingOps: number }, capability: string, method: string, argsJson: string):
{ refusal: CallRefusal } | { args: unknown[]; kernelServed: boolean } {
  const declared = capabilityMethod(capability, method);
  if (!declared) return { refusal: { status: 400, code: 'unknown_capability', message: `Unknown capability ${capability}.${method}` } };
  const kernelServed = declared.spec.servedBy === 'kernel';
  const maxChars = kernelServed ? MAX_KERNEL_ARGS_CHARS : MAX_ARGS_CHARS;
  if (argsJson.length > maxChars) return { refusal: { status: 413, code: 'invalid_arguments', message: `Arguments larger than ${maxChars} characters` } };
  if (jsonTooDeep(argsJson)) return { refusal: { status: 400, code: 'invalid_arguments', message: `Arguments nested deeper than ${MAX_JSON_DEPTH} levels` } };
  if (call.pendingOps >= MAX_PENDING_OPS) {
    return { refusal: { status: 429, code: 'too_many_pending_calls', message: `${call.plugin}: at most ${MAX_PENDING_OPS} host calls may be in flight per invocation; await them` } };
  }
  const parsed = parseCallArguments(argsJson);
  const checked = checkCapabilityCall({ plugin: call.plugin, grants: call.grants, member: capability, method, args: parsed, companyId: call.companyId });
  if ('refusal' in checked) return checked;
  return { args: parsed!, kernelServed };
}
