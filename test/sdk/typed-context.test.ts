import { describe, expect, it } from 'vitest';
import { definePlugin, definePluginWith, type PluginContext } from '../../sdk/plugin/index.ts';

/**
 * The ctx type follows the capabilities a plugin lists: granted members are present and
 * typed, others do not exist. `npm run typecheck` checks the @ts-expect-error lines: each
 * must stay an error, or the typecheck fails.
 */
describe('typed ctx from definePlugin({ capabilities })', () => {
  it('gives exactly the listed capabilities, non-optional', () => {
    const definition = definePlugin({
      capabilities: ['database.namespace.write', 'agents.read'],
      routes: {
        read: async (_request, ctx) => {
          const rows = await ctx.db.query<{ n: number }>('select 1 as n');
          const agents = await ctx.agents.list();
          // @ts-expect-error agents.read gives no pause (agents.pause does)
          void ctx.agents.pause;
          // @ts-expect-error activity.write is not listed
          void ctx.activity;
          return { n: rows.rows[0]?.n, agents: agents.length };
        },
      },
    });
    expect(definition.capabilities).toEqual(['database.namespace.write', 'agents.read']);
  });

  it('gives the capabilities of plugin.json through the module keel plugin build writes (definePluginWith)', () => {
    // What src/plugin.gen.ts does with the manifest's list.
    const definePluginOfManifest = definePluginWith(['http.routes', 'database.namespace.write', 'companies.read'] as const);
    const definition = definePluginOfManifest({
      routes: {
        read: async (_request, ctx) => {
          const rows = await ctx.db.query<{ n: number }>('select 1 as n');
          const company = await ctx.companies.get('00000000-0000-0000-0000-000000000000');
          // @ts-expect-error agents.read is not in the manifest
          void ctx.agents;
          return { n: rows.rows[0]?.n, company };
        },
      },
    });
    // The bundle keeps the list the code was typed against, for the runtime's check.
    expect(definition.capabilities).toEqual(['http.routes', 'database.namespace.write', 'companies.read']);
  });

  it('keeps every member optional without a list', () => {
    const loose = (ctx: PluginContext) => {
      // @ts-expect-error optional: the host builds only what was granted
      void ctx.db.query('select 1');
      return ctx.db?.query('select 1');
    };
    expect(typeof loose).toBe('function');
  });
});
