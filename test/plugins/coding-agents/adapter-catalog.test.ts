import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { adapterDescription } from '../../../sdk/shared/adapter-catalog.ts';
import { DEFAULT_GRACE_SEC, DEFAULT_TIMEOUT_SEC } from '../../../plugins/coding-agents/src/config.ts';
import { driverFor } from '../../../plugins/coding-agents/src/tools/index.ts';

/**
 * The kernel's adapter catalog (what the console's agent form and the llms texts show) says of
 * each local adapter what the coding-agents plugin really accepts: the shared fields of
 * config.ts with their defaults, and per tool its executable, install command, default model,
 * effort values and max turns, as its driver declares them.
 */
const manifest = JSON.parse(readFileSync(new URL('../../../plugins/coding-agents/plugin.json', import.meta.url), 'utf8'));
const LOCAL_TYPES: string[] = manifest.kernelPoints.find((entry: any) => entry.point === 'agent.adapter-config').adapterTypes;

describe('the adapter catalog of the local adapters', () => {
  it('documents the fields every local adapter shares, with the defaults the plugin fills in', () => {
    expect(LOCAL_TYPES.length).toBeGreaterThan(0);
    for (const type of LOCAL_TYPES) {
      const entry = adapterDescription(type);
      expect(entry, type).toBeDefined();
      const field = (name: string) => entry!.fields.find((candidate) => candidate.name === name);
      for (const name of ['command', 'cwd', 'model', 'extraArgs', 'toolSandbox', 'timeoutSec', 'graceSec', 'env']) expect(field(name), `${type}.${name}`).toBeDefined();
      expect(field('timeoutSec')!.default).toBe(String(DEFAULT_TIMEOUT_SEC));
      expect(field('graceSec')!.default).toBe(String(DEFAULT_GRACE_SEC));
      expect(field('toolSandbox')).toMatchObject({ type: 'boolean', default: 'false' });
    }
  });

  it("names each tool's executable, install command, default model, effort values and max turns as its driver does", () => {
    for (const type of LOCAL_TYPES) {
      const driver = driverFor(type);
      if (!driver) continue; // a type without a driver answers adapter_unavailable; its row says what the tool will be
      const entry = adapterDescription(type)!;
      const field = (name: string) => entry.fields.find((candidate) => candidate.name === name);
      expect(field('command')!.default, type).toBe(driver.executable);
      expect(entry.summary, type).toContain(driver.install);
      expect(entry.summary, type).toContain(driver.displayName);
      expect(field('model')!.default ?? null, type).toBe(driver.defaultModel);
      expect(field('effort')?.values ?? null, type).toEqual(driver.efforts);
      expect(field('maxTurns') !== undefined, type).toBe(driver.supportsMaxTurns);
      // Whether the tool's runs go through the model gateway by default, as its driver can route them.
      expect(field('modelProvider')!.notes.includes('not used'), type).toBe(driver.gateway === undefined);
    }
  });
});
