import { PluginError, respond } from '@keel/sdk/plugin';
import { definePlugin } from './plugin.gen.ts';

interface DeliveryRow { id: string; event: string; payload: unknown; bytes: number; received_at: string }

const EVENT = /^[A-Za-z0-9_.:-]{1,100}$/;

export default definePlugin({
  webhooks: {
    deliveries: async (req, ctx) => {
      // The host verified the signature (and refused replays) before this runs; a delivery that
      // reaches here unverified means the endpoint lost its signature declaration: refuse it.
      if (!req.verified) throw new PluginError(401, 'unsigned_delivery', 'Deliveries must be signed');
      let payload: unknown;
      try {
        payload = JSON.parse(req.body);
      } catch {
        throw new PluginError(400, 'invalid_json', 'The delivery body is not JSON');
      }
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new PluginError(400, 'invalid_delivery', 'The delivery must be a JSON object');
      const type = (payload as { type?: unknown }).type;
      const event = typeof type === 'string' && EVENT.test(type) ? type : 'unknown';
      const { rows } = await ctx.db.query<{ id: string }>(
        'insert into deliveries (event, payload, bytes) values ($1, $2::jsonb, $3) returning id',
        [event, payload, req.body.length],
      );
      ctx.log.info('delivery stored', { id: rows[0]!.id, event });
      return respond(202, { id: Number(rows[0]!.id), event });
    },
  },
  routes: {
    'list-deliveries': async (req, ctx) => {
      const { limit, event } = req.query as { limit: number; event?: string };
      const { rows } = event === undefined
        ? await ctx.db.query<DeliveryRow>('select id, event, payload, bytes, received_at from deliveries order by id desc limit $1', [limit])
        : await ctx.db.query<DeliveryRow>('select id, event, payload, bytes, received_at from deliveries where event = $1 order by id desc limit $2', [event, limit]);
      return rows.map((row) => ({ id: Number(row.id), event: row.event, payload: row.payload, bytes: row.bytes, receivedAt: row.received_at }));
    },
  },
  validateConfig: (config) => {
    const secret = config.signingSecret;
    if (typeof secret !== 'string') return { ok: false, errors: ['signingSecret is required to receive deliveries'] };
    if (new Set(secret).size < 8) return { ok: false, errors: ['signingSecret is too repetitive; use a random value'] };
    return { ok: true };
  },
});
