/**
 * The payloads of the kernel's execution events, beside the other events: the manifest's
 * schema names every kernel event, and these types kept in the executions capability tied the
 * capability declarations, the manifest type and the events into one circle of imports.
 */
export type ExecutionStatus = 'starting' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost';

/** One structured output: a stdout line that is a JSON object with a string `type`, or an SSE event (`{event, data}`). */
export interface ExecutionOutput { seq: number; stream: 'stdout' | 'sse'; data: Record<string, unknown> }
/**
 * Payload of the kernel event `execution.output` (to the starting plugin only, in order per
 * execution): the structured outputs of one batch of the log (written every 100 ms), in line
 * order, at most 50 (and about 256 KiB) per event.
 */
export type ExecutionOutputEvent = {
  executionId: string; runId: string; companyId: string; agentId: string;
  outputs: ExecutionOutput[];
};
/** Payload of the kernel event `execution.finished` (once, at the terminal status). `runId` and `agentId` are null for a workspace process (executions.workspace), which has neither. */
export type ExecutionFinishedEvent = {
  executionId: string; runId: string | null; companyId: string; agentId: string | null;
  status: ExecutionStatus; exitCode: number | null; signal: string | null; httpStatus: number | null;
  errorCode: string | null; logBytes: number; response: unknown;
  /** 2 when the command was started again by `retryOnce`. */
  attempts?: number;
};
