import type { Database } from '../db/database.ts';
import { CLUSTER_LOCKS, withClusterLock } from './cluster-lock.ts';

/**
 * Lifecycle work on plugins, one plugin at a time: what is done to one plugin (a change made
 * here, a reconciliation of a change made elsewhere) waits for the earlier work on the same
 * plugin, in this process and, for changes, in every process on the database (the plugin's
 * lifecycle lock, cluster-lock.ts). Work on another plugin does not wait: enabling one plugin
 * never queues behind another's build, migrations or worker start.
 */
export class LifecycleQueue {
  private readonly db: Database;
  /** The last work queued for each plugin key in this process; gone once it has settled. */
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(db: Database) {
    this.db = db;
  }

  /**
   * Runs `fn` after the work queued for `key` before it has settled (whether it succeeded or
   * not). A reconciliation set off by an earlier change (a disable's notification, say) must
   * not deactivate or start the plugin's worker in the middle of a later enable.
   */
  serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => { if (this.tails.get(key) === tail) this.tails.delete(key); });
    return run;
  }

  /**
   * A lifecycle change of `key`: one at a time in this process, and one at a time across every
   * process on the database, so that its checks (is it installed? enabled?) hold until it is done.
   */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.serial(key, () => withClusterLock(this.db, [CLUSTER_LOCKS.lifecycle, key], fn));
  }

  /**
   * `fn` holding the lock of a database namespace, for a change that claims one (an install or
   * an upgrade declaring it): of two plugins claiming one namespace at once, the second sees the first's.
   */
  claimingNamespace<T>(namespace: string | undefined, fn: () => Promise<T>): Promise<T> {
    return namespace ? withClusterLock(this.db, [CLUSTER_LOCKS.lifecycle, `namespace:${namespace}`], fn) : fn();
  }

  /** Settles once every piece of work queued so far, of every plugin, has. */
  async settled(): Promise<void> {
    await Promise.all([...this.tails.values()]);
  }
}
