import type { RouteModule } from '../../http/app.ts';
import { notFound } from '../../http/errors.ts';
import { declareRoutes, LIST_RESPONSE } from '../../http/route-spec.ts';
import { isUuid, queryValidator } from '../../http/validate.ts';
import { contributionsOf } from '../contributions/contribution-points.ts';
import type { ExtensionHost } from '../extension-host.ts';

const listQuery = queryValidator<{ limit: number }>({
  type: 'object',
  properties: { limit: { type: 'integer', minimum: 1, maximum: 500, default: 100 } },
});

const RESOLVED = { type: 'object', required: ['pluginKey', 'eventId', 'state'], properties: { pluginKey: { type: 'string' }, eventId: { type: 'string' }, state: { enum: ['pending', 'discarded'] } } };

/**
 * Dead letters of a plugin (instance admin): events whose delivery to the plugin failed the
 * configured number of times. Each holds back the later events of its publisher about its
 * entity for that plugin until the operator retries it (delivered again, attempts counted
 * afresh) or discards it.
 */
export const pluginEventRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Plugin events');

  route({
    method: 'GET', path: '/api/plugins/:pluginId/events/dead-letters', auth: 'instance_admin', query: listQuery, success: 200, response: LIST_RESPONSE,
    summary: "A plugin's dead letters: events it failed to handle, oldest first",
  }, async (ctx, req) => {
    const row = await host.row(ctx.params.pluginId!);
    ctx.body = await contributionsOf(host).events.store.deadLetters(row.key, req.query().limit);
  });

  for (const action of ['retry', 'discard'] as const) {
    route({
      method: 'POST', path: `/api/plugins/:pluginId/events/dead-letters/:eventId/${action}`, auth: 'instance_admin', success: 200, response: RESOLVED,
      summary: action === 'retry' ? 'Deliver a dead letter again, with a fresh count of attempts' : 'Give up a dead letter, letting the later events of its entity through',
    }, async (ctx) => {
      const row = await host.row(ctx.params.pluginId!);
      const eventId = ctx.params.eventId!;
      const resolved = isUuid(eventId) && await contributionsOf(host).events.store.resolve(row.key, eventId.toLowerCase(), action);
      if (!resolved) throw notFound(`${row.key} has no dead letter ${eventId}`, 'dead_letter_not_found');
      ctx.body = { pluginKey: row.key, eventId: eventId.toLowerCase(), state: action === 'retry' ? 'pending' : 'discarded' };
    });
  }
};
