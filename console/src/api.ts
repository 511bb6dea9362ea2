import { KeelApiError, KeelClient, KeelConnectionError } from '@keel/sdk/client';

/**
 * The console's one client: the SDK's typed client, same origin, with the browser's session
 * cookie (fetch sends it for same-origin calls). The browser's fetch must be called unbound.
 */
export const api = new KeelClient({ baseUrl: window.location.origin, fetch: (input, init) => window.fetch(input, init) });

/** The text to show for a failure: the API's own message where there is one. */
export function errorText(error: unknown): string {
  if (error instanceof KeelApiError) return error.message;
  if (error instanceof KeelConnectionError) return 'Keel cannot be reached; check that it is running.';
  return error instanceof Error ? error.message : String(error);
}

export function isStatus(error: unknown, status: number): boolean {
  return error instanceof KeelApiError && error.status === status;
}

/** Pages of a list answered with the next cursor in `X-Next-Cursor`. */
export async function page<T>(path: string, query: Record<string, string | number | undefined>): Promise<{ items: T[]; next: string | null }> {
  let next: string | null = null;
  const items = await api.request<T[]>('GET', path, undefined, { query, onHeaders: (headers) => { next = headers.get('x-next-cursor'); } });
  return { items, next };
}

/** Uploads a file as multipart form data (the JSON client sends JSON only). */
export async function upload<T>(path: string, file: File, field = 'file'): Promise<T> {
  const form = new FormData();
  form.set(field, file);
  const response = await window.fetch(path, { method: 'POST', body: form, headers: { accept: 'application/json' } });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new KeelApiError(response.status, body, `Upload failed (${response.status})`);
  return body as T;
}

export interface Me { userId: string; user: { id: string; email: string | null; name: string | null }; companyIds: string[]; isInstanceAdmin: boolean; source: string }
export interface Company { id: string; name: string; description: string | null; status: string; issuePrefix: string; budgetMonthlyCents: number; spentMonthlyCents: number; requireBoardApprovalForNewAgents: boolean; brandColor: string | null; logoAssetId?: string | null; logoUrl?: string | null }
export interface Agent { id: string; companyId: string; name: string; role: string; title: string | null; status: string; reportsTo: string | null; adapterType: string; adapterConfig: Record<string, unknown>; budgetMonthlyCents: number; spentMonthlyCents: number; pauseReason: string | null }
export interface Issue { id: string; identifier: string; title: string; description: string | null; status: string; priority: string; assigneeAgentId: string | null; createdAt: string; updatedAt: string }
export interface Run {
  id: string; agentId: string; status: string; invocationSource: string; createdAt: string; startedAt: string | null; finishedAt: string | null; error: string | null;
  triggerDetail?: string | null; wakeReason?: string | null; issueId?: string | null; adapterType?: string; exitCode?: number | null; signal?: string | null;
  errorCode?: string | null; cancelReason?: string | null; usageJson?: Record<string, unknown> | null; resultJson?: Record<string, unknown> | null;
}
export const ISSUE_STATUSES = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked', 'done', 'cancelled'] as const;
