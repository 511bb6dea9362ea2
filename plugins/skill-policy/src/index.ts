import type { SkillPolicyContext } from './context.ts';
import { definePlugin } from './plugin.gen.ts';
import { kernelEvents } from '@keel/sdk/plugin';
import { evaluateRoute, getPolicy, replacePolicyRoute, resetPolicyRoute } from './routes.ts';
import { decideService } from './service.ts';
import { forgetCompany } from './store.ts';

export default definePlugin({
  routes: {
    'get-policy': getPolicy,
    'replace-policy': replacePolicyRoute,
    'reset-policy': resetPolicyRoute,
    evaluate: evaluateRoute,
  },
  services: {
    decide: decideService,
  },
  events: {
    // At least once: deleting what is already gone is harmless.
    [kernelEvents.companyDeleted.name]: async (payload: Record<string, unknown>, ctx: SkillPolicyContext) => {
      const companyId = String(payload.companyId ?? '');
      if (companyId) await forgetCompany(ctx, companyId);
    },
  },
});
