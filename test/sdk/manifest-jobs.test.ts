import { describe, expect, expectTypeOf, it } from 'vitest';
import { contextModuleText } from '../../sdk/build/context-module.ts';
import { definePlugin } from '../../examples/background-import/src/plugin.gen.ts';
import type { Context as RuntimeContext, JobPayload as RuntimeJobPayload } from '../../plugins/runtime/src/plugin.gen.ts';
import type { JobPayload as WikiJobPayload } from '../../plugins/wiki/src/plugin.gen.ts';
import type { EnqueueOptions, FolderChanges, PluginContext } from '../../sdk/plugin/index.ts';

/**
 * A plugin's jobs are typed from its plugin.json: `keel plugin build` writes each job's payload
 * type, derived from its payloadSchema (null without one), into plugin.gen.ts, and
 * `ctx.jobs.enqueue(key, payload)` and the `jobs` handler of each key are checked against them
 * (`npm run typecheck` checks each @ts-expect-error line: it must stay an error).
 */
describe("a plugin's jobs, typed from plugin.json", () => {
  it('type the enqueue and the handler of background-import\'s import job', () => {
    const definition = definePlugin({
      routes: {
        start: async (_request, ctx) => {
          await ctx.jobs.enqueue('import', { importId: 1 }, { singletonKey: 'import-1' });
          // @ts-expect-error the payloadSchema requires importId
          await ctx.jobs.enqueue('import', {});
          // @ts-expect-error importId is an integer
          await ctx.jobs.enqueue('import', { importId: '1' });
          // @ts-expect-error the payloadSchema allows no other property
          await ctx.jobs.enqueue('import', { importId: 1, extra: true });
          // @ts-expect-error a job with a payloadSchema is enqueued with its payload
          await ctx.jobs.enqueue('import');
          // @ts-expect-error plugin.json declares no job 'export'
          await ctx.jobs.enqueue('export', { importId: 1 });
          return null;
        },
      },
      jobs: {
        import: async (_ctx, payload) => {
          // null: an operator's trigger runs any job without a payload.
          expectTypeOf(payload).toEqualTypeOf<{ importId: number } | null>();
          if (payload === null) return null;
          const importId: number = payload.importId;
          // @ts-expect-error the schema has no such property
          void payload.name;
          return importId;
        },
        // @ts-expect-error plugin.json declares no job 'export'
        export: async () => null,
      },
    });
    expect(Object.keys(definition.jobs!)).toEqual(['import', 'export']);
  });

  it('type the jobs of the runtime plugin: payloads by key, none for a job without a payloadSchema', () => {
    async function enqueues(ctx: RuntimeContext): Promise<void> {
      await ctx.jobs.enqueue('heartbeat', { agentId: 'a', slot: 1, intervalSec: 60 });
      await ctx.jobs.enqueue('start-runs', { agentId: 'a' });
      // @ts-expect-error slot is required by heartbeat's payloadSchema
      await ctx.jobs.enqueue('heartbeat', { agentId: 'a', intervalSec: 60 });
      // @ts-expect-error routine's payload names a routine, not an agent
      await ctx.jobs.enqueue('routine', { agentId: 'a', slot: 1, intervalSec: 60 });
      await ctx.jobs.enqueue('heartbeat-sweep');
      // @ts-expect-error heartbeat-sweep declares no payloadSchema: it takes no payload
      await ctx.jobs.enqueue('heartbeat-sweep', { agentId: 'a' });
      // @ts-expect-error plugin.json declares no job 'heartbeats'
      await ctx.jobs.enqueue('heartbeats', { agentId: 'a', slot: 1, intervalSec: 60 });
    }
    expect(typeof enqueues).toBe('function');
    expectTypeOf<RuntimeJobPayload<'heartbeat-sweep'>>().toEqualTypeOf<null>();
    expectTypeOf<NonNullable<RuntimeJobPayload<'heartbeat'>>['slot']>().toEqualTypeOf<number>();
    // The job a folder's onChange names runs with the SDK's folder changes.
    expectTypeOf<WikiJobPayload<'folder-changed'>>().toEqualTypeOf<FolderChanges | null>();
    // Code typed without a manifest enqueues any key with any payload.
    expectTypeOf<Parameters<NonNullable<PluginContext['jobs']>['enqueue']>>().toEqualTypeOf<[key: string, payload?: unknown, options?: EnqueueOptions]>();
  });

  it('are written into plugin.gen.ts from each job\'s payloadSchema', () => {
    const schema = { type: 'object', required: ['id'], properties: { id: { type: 'string' } } };
    const text = contextModuleText({
      capabilities: [{ id: 'jobs.enqueue' }, { id: 'local.folders' }],
      jobs: [{ key: 'import', payloadSchema: schema }, { key: 'nightly' }, { key: 'reindex' }],
      folders: [{ onChange: { job: 'reindex' } }],
    });
    expect(text).toContain(`export type Jobs = {\n  'import': { payload: PayloadOfSchema<${JSON.stringify(schema)}> };\n  'nightly': { payload: null };\n  'reindex': { payload: null; onChange: FolderChanges };\n};`);
    expect(text).toContain('export const definePlugin = definePluginWith<typeof capabilities, Jobs>(capabilities);');
    expect(text).toContain('type FolderChanges');
    const none = contextModuleText({ capabilities: [] });
    expect(none).toContain('export type Jobs = {};');
    expect(none).not.toContain('PayloadOfSchema');
    expect(none).not.toContain('FolderChanges');
  });
});
