import type { WorkerInit } from '../../protocol/messages.ts';
import type { WorkerCapability } from './types.ts';

/**
 * Capabilities the worker serves itself (outside the kernel process): network and local
 * folders. Each lives in its own module; this file only assembles them for a plugin.
 */
export function workerCapabilities(_init: WorkerInit): Record<string, WorkerCapability> {
  return {};
}
