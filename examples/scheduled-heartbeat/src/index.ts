import { definePlugin } from './plugin.gen.ts';

interface BeatRow { id: string; beat_at: string; invocation_id: string }

const beat = (row: BeatRow) => ({ id: Number(row.id), beatAt: row.beat_at, invocationId: row.invocation_id });

export default definePlugin({
  jobs: {
    // Runs in one transaction: the insert and the trim commit together or not at all.
    beat: async (ctx) => {
      const keep = Number(ctx.config.keep ?? 1440);
      const { rows } = await ctx.db.query<{ id: string; beat_at: string }>('insert into heartbeats (invocation_id) values ($1) returning id, beat_at', [ctx.invocation.id]);
      const trimmed = await ctx.db.query('delete from heartbeats where id <= $1', [Number(rows[0]!.id) - keep]);
      return { id: Number(rows[0]!.id), beatAt: rows[0]!.beat_at, trimmed: trimmed.rowCount };
    },
  },
  routes: {
    status: async (_req, ctx) => {
      const { rows } = await ctx.db.query<BeatRow & { total: string }>(
        'select id, beat_at, invocation_id, count(*) over () as total from heartbeats order by id desc limit 6');
      return { count: rows.length ? Number(rows[0]!.total) : 0, latest: rows.length ? beat(rows[0]!) : null, previous: rows.slice(1).map(beat) };
    },
  },
});
