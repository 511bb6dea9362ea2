import type { Invocation } from '../invocation.ts';
import type { PluginDatabase } from './database.ts';

/** Runs a statement on the invocation's transaction, or on a pooled connection when it has none. */
export async function onInvocationClient<T>(db: PluginDatabase, invocation: Invocation, run: (client: import('pg').PoolClient) => Promise<T>): Promise<T> {
  const transaction = db.transactionOf(invocation);
  if (transaction) {
    const client = await transaction;
    return db.statement(client, () => run(client));
  }
  return db.pooled(invocation, run);
}

/**
 * Entity types the database checks against the invocation's company (or the plugin itself):
 * the kernel's own (company, agent, run, ...). Read from keel_bridge.activity_entity_kinds,
 * which holds the one list, when an entry is first recorded (not at boot, which stays free of
 * database work); compared in lower case without surrounding blanks, as there. The list is read
 * on the recording call's own connection (inside its transaction), never on another one of the
 * pool: a call holding its transaction (and the company row an issue number comes from) that
 * waited for a second connection would wait forever once a burst of calls held all the others
 * while waiting on its lock. Calls that record before the list arrives each read it themselves,
 * so that none waits on a statement queued behind another call's locks.
 */
export class ActivityEntityKinds {
  private readonly db: PluginDatabase | null;
  private loaded: ReadonlySet<string> | null = null;

  constructor(db: PluginDatabase | null) {
    this.db = db;
  }

  /** The list, once it has been read; null before. */
  get known(): ReadonlySet<string> | null {
    return this.loaded;
  }

  async get(invocation: Invocation): Promise<ReadonlySet<string>> {
    if (this.loaded) return this.loaded;
    if (!this.db) return (this.loaded = new Set());
    const result = await onInvocationClient(this.db, invocation, (client) => client.query<{ kinds: string[] }>('select keel_bridge.activity_entity_kinds() as kinds'));
    return (this.loaded ??= new Set(result.rows[0]?.kinds ?? []));
  }
}
