import { PluginError } from '@keel/sdk/plugin';
import { definePlugin, type Context } from './plugin.gen.ts';

/** What the UI sends to data and action handlers. */
interface UiInput { params: unknown; companyId: string | null }

async function companyName(ctx: Context, companyId: string | null): Promise<string | null> {
  if (!companyId) return null;
  const company = await ctx.companies.get(companyId);
  return typeof company?.name === 'string' ? company.name : null;
}

export default definePlugin({
  data: {
    // Feeds the company-dashboard slot (its dataKey).
    greeting: async (input, ctx) => {
      const { companyId } = input as UiInput;
      const salutation = String(ctx.config.salutation ?? 'Hello');
      const name = await companyName(ctx, companyId);
      return {
        title: name ? `${salutation}, ${name}!` : `${salutation}!`,
        lines: name ? [`This panel is contributed by the greeting-panel plugin for ${name}.`] : ['Open a company to be greeted by name.'],
      };
    },
  },
  actions: {
    // The toolbar launcher's action.
    wave: async (input, ctx) => {
      const { companyId, params } = input as UiInput;
      if (!companyId) throw new PluginError(400, 'company_required', 'Waving needs a company');
      const times = typeof (params as { times?: unknown } | null)?.times === 'number' ? Math.min(Math.max(Math.trunc((params as { times: number }).times), 1), 5) : 1;
      return { message: `${'👋'.repeat(times)} from ${await companyName(ctx, companyId) ?? 'somewhere'}` };
    },
  },
});
