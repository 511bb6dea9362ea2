import { describe, expect, it } from 'vitest';
import { contextModuleText } from '../../sdk/build/context-module.ts';
import { definePlugin } from '../../examples/task-assignments/src/plugin.gen.ts';
import type { EventPayload } from '../../sdk/plugin/index.ts';

/**
 * A plugin's own events (publishedEvents in its plugin.json, not declared in sdk/events) are
 * typed from its manifest: `keel plugin build` writes their payload types, derived from the
 * schemas, into plugin.gen.ts, and its publish and its subscribers are checked against them
 * (`npm run typecheck` checks each @ts-expect-error line: it must stay an error).
 */
describe("a plugin's own events, typed from plugin.json", () => {
  it('type the publish and the subscriber of task-assignments.task.assigned', () => {
    const definition = definePlugin({
      routes: {
        assign: async (_request, ctx) => {
          await ctx.events.publish('task-assignments.task.assigned', { taskId: 't', assignee: 'a', previous: null }, { entityType: 'task', entityId: 't' });
          // @ts-expect-error the schema requires assignee
          await ctx.events.publish('task-assignments.task.assigned', { taskId: 't' }, { entityType: 'task', entityId: 't' });
          // @ts-expect-error the schema allows no other property
          await ctx.events.publish('task-assignments.task.assigned', { taskId: 't', assignee: 'a', extra: 1 }, { entityType: 'task', entityId: 't' });
          return null;
        },
      },
      events: {
        'task-assignments.task.assigned': async (payload) => {
          const taskId: string = payload.taskId;
          const previous: string | null | undefined = payload.previous;
          // @ts-expect-error the schema has no such property
          void payload.title;
          void taskId; void previous;
        },
      },
    });
    expect(Object.keys(definition.events!)).toEqual(['task-assignments.task.assigned']);
    // An event no manifest of the checkout declares stays a JSON object.
    const other: EventPayload<'acme.order.created'> = { anything: 1 };
    expect(other).toEqual({ anything: 1 });
  });

  it('are written into plugin.gen.ts only for events sdk/events does not declare', () => {
    const schema = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
    const own = contextModuleText({ capabilities: [{ id: 'events.publish' }], publishedEvents: [{ name: 'acme.order.created', schema }] });
    expect(own).toContain(`    'acme.order.created': PayloadOfSchema<${JSON.stringify(schema)}>;\n`);
    expect(own).toContain("declare module '@keel/sdk/plugin' {\n  interface ManifestEventPayloads {\n");
    const declared = contextModuleText({ capabilities: [{ id: 'events.publish' }], publishedEvents: [{ name: 'work.issue.created', schema }] });
    expect(declared).not.toContain('ManifestEventPayloads');
    expect(contextModuleText({ capabilities: [] })).not.toContain('ManifestEventPayloads');
  });
});
