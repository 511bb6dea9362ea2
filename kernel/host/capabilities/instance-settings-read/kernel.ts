import { instanceSettingsRead as spec } from '../../../../sdk/capabilities/instance-settings.ts';
import { readSettings } from '../../../tenancy/instance-settings.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/** The instance settings, read as the kernel's own routes read them (stored values over defaults). */
const instanceSettingsCapability: KernelCapability<'db'> = {
  methods: {
    get: { run: async (call) => readSettings(call.kernel.db, call.args[0] as 'general' | 'experimental') },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { instanceSettings: instanceSettingsCapability.methods } });
