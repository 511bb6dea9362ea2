import { companiesRead as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { toCompany } from '../../../tenancy/companies.ts';
import { readCompany, withCurrentSpend } from '../../../tenancy/company-access.ts';
import { assertSameCompany, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const companiesCapability: KernelCapability<'db'> = {
  methods: {
    get: {
      run: async (call) => {
        const companyId = uuidArg(call.args[0], 'companyId');
        assertSameCompany(call, companyId, `company ${companyId}`);
        const row = await readCompany(call.kernel.db, companyId);
        return row ? toCompany(await withCurrentSpend(call.kernel.db, row)) : null;
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { companies: companiesCapability.methods } });
