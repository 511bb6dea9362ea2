import { useEffect, useState } from 'react';
import { LIVE_MS, useEvery } from '../live.ts';
import { loadInbox, onInboxChanged } from './inbox-api.ts';

/**
 * The inbox's unread count beside its menu entry, live: asked again on every page change, when
 * this tab marks items read, and every few seconds while the tab is visible (the dashboard's
 * poll), so a new approval, incident or failed run shows without navigating. Nothing when all is
 * read (or the inbox cannot be read).
 */
export function UnreadBadge({ companyId, path }: { companyId: string; path: string }) {
  const [unread, setUnread] = useState<number | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => onInboxChanged(() => setTick((n) => n + 1)), []);
  useEvery(LIVE_MS, () => setTick((n) => n + 1));
  useEffect(() => {
    let live = true;
    loadInbox(companyId).then((inbox) => { if (live) setUnread(inbox.counts.unread); }, () => { if (live) setUnread(null); });
    return () => { live = false; };
  }, [companyId, path, tick]);
  if (!unread) return null;
  return <> <span className="badge unread" data-testid="inbox-unread">{unread}<span className="sr-only"> unread</span></span></>;
}
