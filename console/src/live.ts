import { useEffect, useRef } from 'react';

/**
 * How often the console's live parts (the dashboard's agents, runs, stops and approvals; the
 * menu's unread count) ask the server again while the tab is visible. The server holds the state
 * (several Keel processes may serve one company), so asking is how a tab learns of a change.
 */
export const LIVE_MS = 4_000;

/** Calls the latest `tick` every `ms` while the tab is visible. */
export function useEvery(ms: number, tick: () => void) {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    const timer = setInterval(() => { if (document.visibilityState === 'visible') latest.current(); }, ms);
    return () => clearInterval(timer);
  }, [ms]);
}
