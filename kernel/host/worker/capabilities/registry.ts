import type { WorkerInit } from '../../protocol/messages.ts';
import { foldersCapability } from './folders.ts';
import { httpCapability } from './http-fetch.ts';
import type { WorkerCapability } from './types.ts';
import { workspacesCapability } from './workspaces.ts';

/**
 * Capabilities the worker serves itself (outside the kernel process): network, local
 * folders and working directories. Each lives in its own module; this file only assembles them for a plugin. The
 * grant check happens before any of them runs (checkCapabilityCall of sdk/capabilities).
 */
export function workerCapabilities(init: WorkerInit): Record<string, WorkerCapability> {
  return {
    http: httpCapability(init),
    folders: foldersCapability(),
    workspaces: workspacesCapability(),
  };
}
