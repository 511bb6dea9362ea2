import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who asked for a lifecycle change (install, enable, ...), so the host's activity entries
 * name the operator; changes the host makes on its own (first-party bootstrap) are `system`.
 */
export const lifecycleActor = new AsyncLocalStorage<{ actorType: 'user' | 'agent' | 'system'; actorId: string }>();
