import { api } from '../api.ts';

export type InboxKind = 'approval' | 'budget_incident' | 'blocked_issue' | 'failed_run' | 'mention';
export interface InboxItem { id: string; kind: InboxKind; title: string; detail: string | null; at: string; href: string; read: boolean }
export interface InboxCounts { total: number; unread: number; byKind: Record<InboxKind, { total: number; unread: number }> }
export interface Inbox { userId: string; mentionHandle: string | null; items: InboxItem[]; counts: InboxCounts }

/**
 * Tells the menu's unread count that the inbox changed in this tab (an item marked read), so it
 * asks again rather than keeping a copy of the marks: the server holds them.
 */
const CHANGED = 'keel:inbox-changed';

export function inboxChanged(): void {
  window.dispatchEvent(new Event(CHANGED));
}

export function onInboxChanged(listener: () => void): () => void {
  window.addEventListener(CHANGED, listener);
  return () => window.removeEventListener(CHANGED, listener);
}

export const loadInbox = (companyId: string) => api.get<Inbox>(`/api/companies/${companyId}/inbox`);

export async function markRead(companyId: string, itemIds: string[]): Promise<void> {
  await api.post(`/api/companies/${companyId}/inbox/read`, { itemIds });
  inboxChanged();
}

export async function markAllRead(companyId: string): Promise<void> {
  await api.post(`/api/companies/${companyId}/inbox/read-all`, {});
  inboxChanged();
}
