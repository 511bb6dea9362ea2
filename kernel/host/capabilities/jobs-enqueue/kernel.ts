import { jobsEnqueue as spec } from '../../../../sdk/capabilities/jobs.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

function enqueuedJobs(call: BrokeredCall<never, 'contributionPoints' | 'plugins'>) {
  return { jobs: call.host.contributionPoints().enqueued, plugin: call.host.plugins.get(call.plugin)! };
}

/**
 * The kernel's half of `ctx.jobs` (jobs.enqueue): work a plugin schedules at run time, run later
 * as a call of one of its declared jobs, in the company of the call that enqueued it
 * (contributions/enqueued-jobs.ts). The worker asks here first (worker.ts beside this file),
 * then stages the signed ticket in the call's own transaction. The company comes from the
 * kernel's record of the call; a cancel reaches only this plugin's jobs of that same company.
 * Not a member plugins can call: the registry declares no `jobChecks`.
 */
const jobChecksCapability: KernelCapability<never, 'contributionPoints' | 'plugins'> = {
  methods: {
    enqueue: {
      checkedAs: 'jobs.enqueue',
      run: async (call) => {
        const { jobs, plugin } = enqueuedJobs(call);
        return jobs.check(plugin, call.info.id, call.info.companyId, call.args);
      },
    },
    cancel: {
      checkedAs: 'jobs.cancel',
      run: async (call) => {
        const { jobs, plugin } = enqueuedJobs(call);
        return jobs.cancel(plugin, call.info.id, call.info.companyId, call.args[0]);
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, {
  uses: { host: ['contributionPoints', 'plugins'] },
  internal: { jobChecks: jobChecksCapability.methods },
  bridgeFunctions: ['keel_bridge.stage_job(text, text, text, text)', 'keel_bridge.unstage_job(text, text, uuid)'],
});
