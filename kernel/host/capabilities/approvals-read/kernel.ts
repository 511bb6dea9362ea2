import { approvalsRead as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import type { ApprovalStatus } from '../../../../sdk/capabilities/kernel-data.ts';
import { APPROVAL_LIST_LIMIT, countApprovals, listApprovals, toApprovalJson, type ApprovalFilter } from '../../../tenancy/approvals.ts';
import { callCompany } from '../scope.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/** The registry checked the filter against its schema before the call got here; an omitted one arrives as null. */
function filterOf(call: BrokeredCall<'db'>): ApprovalFilter & { limit?: number } {
  const given = (call.args[0] ?? {}) as { status?: ApprovalStatus; type?: string; limit?: number };
  return { status: given.status, type: given.type, limit: given.limit };
}

const approvalsCapability: KernelCapability<'db'> = {
  methods: {
    list: {
      run: async (call) => {
        const { limit, ...filter } = filterOf(call);
        // Only the approvals of the company the call serves; a hire's requested configuration stays with the kernel.
        const rows = await listApprovals(call.kernel.db, callCompany(call), { ...filter, limit: limit ?? APPROVAL_LIST_LIMIT.default });
        return rows.map((row) => toApprovalJson(row, { redacted: true }));
      },
    },
    count: {
      run: async (call) => {
        const { status, type } = filterOf(call);
        return countApprovals(call.kernel.db, callCompany(call), { status, type });
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { approvals: approvalsCapability.methods } });
