import { companiesRead as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { toCompany } from '../../../tenancy/companies.ts';
import { readCompany } from '../../../tenancy/company-access.ts';
import { assertSameCompany, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';
import { companyMonthSpend } from '../../../tenancy/month-spend.ts';

const companiesCapability: KernelCapability<'db'> = {
  methods: {
    get: {
      run: async (call) => {
        const companyId = uuidArg(call.args[0], 'companyId');
        assertSameCompany(call, companyId, `company ${companyId}`);
        const row = await readCompany(call.kernel.db, companyId);
        // The company guard's row (possibly the cached one) carries no spend (month-spend.ts).
        return row ? toCompany({ ...row, spent_monthly_cents: await companyMonthSpend(call.kernel.db, companyId) }) : null;
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { companies: companiesCapability.methods } });
