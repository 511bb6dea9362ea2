import { readSettings } from '../../tenancy/instance-settings.ts';
import type { KernelCapability } from './types.ts';

/** The instance settings, read as the kernel's own routes read them (stored values over defaults). */
export const instanceSettingsCapability: KernelCapability = {
  methods: {
    get: { run: async (call) => readSettings(call.kernel.db, call.args[0] as 'general' | 'experimental') },
  },
};
