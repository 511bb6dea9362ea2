import type { ActivityEntry } from '../../sdk/capabilities/activity.ts';
import type { Context } from 'koa';
import { activityActor, type Actor } from '../auth/actor.ts';
import { iso, type Queryable } from '../db/database.ts';
import { sanitizeDetails } from '../../sdk/shared/sanitize.ts';

export interface ActivityInput {
  companyId: string | null;
  actorType: 'agent' | 'user' | 'system';
  actorId: string;
  action: string;
  entityType: string;
  entityId: string;
  agentId?: string | null;
  runId?: string | null;
  details?: unknown;
}

/** An entry as the activity routes answer it: the SDK's shape, which plugins read through activity.read. */
export type ActivityRecord = ActivityEntry;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The append-only activity log. The database's one writer, keel_private.append_activities,
 * gives each entry its place in the company's hash chain (and the database refuses any other
 * insert, and every update and delete); this service only sanitises and appends through it,
 * like every other writer.
 * Write entries inside the transaction of the change they describe, so that a change and its
 * record commit or vanish together.
 */
export class ActivityLog {
  /** Installed by the extension host; none until it is. */
  hiddenEntities: () => readonly HiddenEntitySource[] = () => [];

  async record(db: Queryable, input: ActivityInput): Promise<ActivityRecord> {
    const details = input.details === undefined ? null : sanitizeDetails(input.details);
    // The one writer of the log (keel_private.append_activities), which the plugins' bridge uses too.
    const rows = await db.query('select * from keel_private.append_activities(?::jsonb)', [JSON.stringify([{
      companyId: input.companyId, actorType: input.actorType, actorId: input.actorId, action: input.action, entityType: input.entityType,
      entityId: input.entityId, agentId: validUuid(input.agentId), runId: validUuid(input.runId), details,
    }])]);
    return toRecord(rows[0]!);
  }

  /** Records an entry for the request's actor and marks the request as audited. */
  async recordFor(ctx: Context, db: Queryable, input: Omit<ActivityInput, 'actorType' | 'actorId' | 'agentId' | 'runId'> & { agentId?: string | null }): Promise<ActivityRecord> {
    const who = activityActor(ctx.state.actor as Actor);
    ctx.state.activityWritten = true;
    return this.record(db, { ...input, actorType: who.actorType, actorId: who.actorId, agentId: input.agentId ?? who.agentId, runId: who.runId });
  }

  /**
   * A company's entries, newest first, by exact-match filters. `omitHidden` leaves out the
   * entries about rows their owner hides (the company feed does; see HiddenEntitySource).
   */
  async list(db: Queryable, companyId: string, filters: ActivityFilters, options: { omitHidden?: boolean } = {}): Promise<ActivityRecord[]> {
    const where = ['company_id = ?'];
    const params: unknown[] = [companyId];
    if (filters.agentId !== undefined) { where.push('agent_id = ?'); params.push(filters.agentId); }
    if (filters.actorType !== undefined) { where.push('actor_type = ?'); params.push(filters.actorType); }
    if (filters.actorId !== undefined) { where.push('actor_id = ?'); params.push(filters.actorId); }
    if (filters.entityType !== undefined) { where.push('entity_type = ?'); params.push(filters.entityType); }
    if (filters.entityId !== undefined) { where.push('entity_id = ?'); params.push(filters.entityId); }
    if (filters.runId !== undefined) { where.push('run_id = ?'); params.push(filters.runId); }
    if (options.omitHidden) {
      for (const source of this.hiddenEntities()) {
        if (filters.entityType !== undefined && filters.entityType !== source.entityType) continue;
        const ids = await source.hiddenIds(db, companyId);
        if (ids.length === 0) continue;
        where.push('not (entity_type = ? and entity_id in (select jsonb_array_elements_text(?::jsonb)))');
        params.push(source.entityType, JSON.stringify(ids));
      }
    }
    if (filters.limit !== undefined) params.push(filters.limit);
    const rows = await db.query(`select * from activity_log where ${where.join(' and ')} order by seq desc${filters.limit === undefined ? '' : ' limit ?'}`, params);
    return rows.map(toRecord);
  }
}

export interface ActivityFilters { agentId?: string; actorType?: string; actorId?: string; entityType?: string; entityId?: string; runId?: string; limit?: number }

/**
 * Rows that their owner hides (a hidden issue): entries about them stay in the log, which is
 * append-only, but the company feed leaves them out. The kernel's core knows no such rows; the
 * extension host installs the sources (plugins' `database.entities` with a `hiddenColumn`).
 */
export interface HiddenEntitySource {
  entityType: string;
  /** The ids, as text, of the company's hidden rows of this type. */
  hiddenIds(db: Queryable, companyId: string): Promise<string[]>;
}

function validUuid(value: string | null | undefined): string | null {
  return value && UUID.test(value) ? value : null;
}

export function toRecord(row: Record<string, any>): ActivityRecord {
  return {
    id: row.id,
    companyId: row.company_id,
    actorType: row.actor_type,
    actorId: row.actor_id,
    action: row.action,
    entityType: row.entity_type,
    entityId: row.entity_id,
    agentId: row.agent_id,
    runId: row.run_id,
    details: row.details ?? null,
    createdAt: iso(row.created_at)!,
  };
}
