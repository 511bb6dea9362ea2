import { userInfo } from 'node:os';
import type { Queryable } from '../db/database.ts';
import { readSettings } from '../tenancy/instance-settings.ts';
import type { ActivityRecord } from './activity-log.ts';

/**
 * With `censorUsernameInLogs` on, the host's operating-system user name (which shows up in
 * paths such as /home/<name>/...) is masked in the details served to readers: the company
 * feed and plugins reading the log (activity.read) alike. The stored entry is untouched: the
 * log is append-only and its hash chain covers the original.
 */
export async function forReaders(db: Queryable, entries: ActivityRecord[]): Promise<ActivityRecord[]> {
  const { censorUsernameInLogs } = await readSettings(db, 'general');
  return censorUsernameInLogs ? entries.map(censorUsername) : entries;
}

const hostUser = (() => {
  try { return userInfo().username; } catch { return ''; }
})();

function censorUsername(entry: ActivityRecord): ActivityRecord {
  if (hostUser.length < 2 || entry.details === null) return entry;
  const masked = hostUser[0] + '*'.repeat(hostUser.length - 1);
  const pattern = new RegExp(`\\b${hostUser.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'g');
  return { ...entry, details: mapStrings(entry.details, (text) => text.replace(pattern, masked)) };
}

/**
 * A JSON value with every string replaced by `censor` (object keys too, when `keys`): the one
 * walk that masks what readers see, here and for run output (executions/credential-mask.ts).
 */
export function mapStrings(value: unknown, censor: (text: string) => string, keys = false): unknown {
  if (typeof value === 'string') return censor(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, censor, keys));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [keys ? censor(k) : k, mapStrings(v, censor, keys)]));
  }
  return value;
}
