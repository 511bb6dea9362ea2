import { defineCapability, method } from './define.ts';
import { record } from './schemas.ts';

export interface InstanceSettingsCapability {
  /**
   * One section of the instance settings (`general` or `experimental`), as the kernel serves
   * them at GET /api/instance/settings/{section}: instance-wide switches, nothing of a company.
   */
  get(section: 'general' | 'experimental'): Promise<Record<string, unknown>>;
}

export const instanceSettingsRead = defineCapability<{ instanceSettings: InstanceSettingsCapability }>()({
  id: 'instance.settings.read',
  summary: "Read the instance's general and experimental settings (feature switches and their defaults)",
  members: { instanceSettings: { get: method('kernel', [{ enum: ['general', 'experimental'] }], record, { scope: 'instance' }) } },
});
