import type { SessionKeyStrategy } from './config.ts';
import { sha256Hex } from './sha256.ts';

/** The longest session key sent as it is; a longer one is sent as its SHA-256 (64 hex digits). */
export const MAX_SESSION_KEY = 64;

export interface SessionFacts { agentId: string; runId: string; issueId: string | null; taskKey: string }

/**
 * The X-Remote-Session-Key of a run: `issue` one session per issue (an issue of the agent's own
 * company: the caller checks it; without an issue, one per task of the agent), `agent` one across
 * all the agent's runs, `run` a new one each run, `none` no header.
 */
export function sessionKey(strategy: SessionKeyStrategy, facts: SessionFacts): string | null {
  let key: string;
  if (strategy === 'none') return null;
  if (strategy === 'run') key = `keel:run:${facts.runId}`;
  else if (strategy === 'agent') key = `keel:agent:${facts.agentId}`;
  else key = facts.issueId ? `keel:issue:${facts.issueId}` : `keel:agent:${facts.agentId}:task:${facts.taskKey}`;
  return key.length <= MAX_SESSION_KEY ? key : sha256Hex(key);
}
