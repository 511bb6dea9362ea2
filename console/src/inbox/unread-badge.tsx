import { useEffect, useState } from 'react';
import { loadInbox, onInboxChanged } from './inbox-api.ts';

/**
 * The inbox's unread count beside its menu entry: asked again on every page change and when
 * this tab marks items read. Nothing when all is read (or the inbox cannot be read).
 */
export function UnreadBadge({ companyId, path }: { companyId: string; path: string }) {
  const [unread, setUnread] = useState<number | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => onInboxChanged(() => setTick((n) => n + 1)), []);
  useEffect(() => {
    let live = true;
    loadInbox(companyId).then((inbox) => { if (live) setUnread(inbox.counts.unread); }, () => { if (live) setUnread(null); });
    return () => { live = false; };
  }, [companyId, path, tick]);
  if (!unread) return null;
  return <> <span className="badge unread" data-testid="inbox-unread">{unread}<span className="sr-only"> unread</span></span></>;
}
