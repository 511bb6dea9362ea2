import { databaseRead as spec } from '../../../../sdk/capabilities/database.ts';
import type { WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.db.query` (database.namespace.read; database.namespace.write grants the same method: the
 * connection's role decides what it may do), served by the plugin's own connection
 * (worker/capabilities/database.ts). A plugin without a database gets no `db`.
 */
export const workerSide = workerUnit(spec, ({ database }): Record<string, WorkerCapability> => (database ? { db: database.capability() } : {}));
