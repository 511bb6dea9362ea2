import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { bridgeSources } from '../../kernel/db/bridge-functions.ts';
import { allCapabilityMethods, CAPABILITIES, type CapabilitySpec } from '../../sdk/capabilities/index.ts';
import { DeliveredSecrets } from '../../kernel/host/worker/delivered-secrets.ts';
import { brokerTable, isKernelUnit, kernelUnit } from '../../kernel/host/capabilities/unit.ts';
import { checkedUnit } from '../../kernel/host/capabilities/unit-check.ts';
import { workerBundleOptions } from '../../kernel/host/worker-entry.ts';
import { KERNEL_UNITS } from '../../kernel/host/capabilities/units.ts';
import { ActivityEntityKinds } from '../../kernel/host/worker/capabilities/activity-entity-kinds.ts';
import { PluginDatabase } from '../../kernel/host/worker/capabilities/database.ts';
import { WORKER_UNITS } from '../../kernel/host/capabilities/worker-units.ts';
import { workerTable, workerUnit } from '../../kernel/host/worker/capabilities/unit.ts';
import type { WorkerServices } from '../../kernel/host/worker/capabilities/unit.ts';
import type { WorkerInit } from '../../kernel/host/protocol/messages.ts';

/**
 * Every method a capability declaration grants has exactly one server: a kernel unit for a
 * `kernel` method, a worker unit for a `worker` or `database` method, and never both or two of
 * one kind. A unit serves only methods its own declaration declares, and a bridge function is
 * granted by exactly one capability. The tables the broker and the worker use are derived from
 * the same units, so what is checked here is what runs.
 */
// A database that never connects (pg pools connect on first query): the worker units are only built.
const database = new PluginDatabase('postgres://keel@127.0.0.1:1/keel', 'plugin_probe', 1, true, 'capability-servers');
const services: WorkerServices = {
  init: { pluginKey: 'probe', grants: [], network: [], privateNetworkHosts: [] } as unknown as WorkerInit,
  database,
  activityKinds: new ActivityEntityKinds(database),
  delivered: new DeliveredSecrets(),
  kernel: async () => null,
};
afterAll(() => database.close());

function servedMethods(part: Record<string, Record<string, unknown>>): string[] {
  return Object.entries(part).flatMap(([member, methods]) => Object.keys(methods).map((name) => `${member}.${name}`));
}

const kernelServers = new Map<string, string[]>();
for (const unit of KERNEL_UNITS) {
  for (const key of servedMethods(unit.serves ?? {})) kernelServers.set(key, [...(kernelServers.get(key) ?? []), unit.spec.id]);
}
const workerServers = new Map<string, string[]>();
for (const unit of WORKER_UNITS) {
  for (const key of servedMethods(unit.serve(services))) workerServers.set(key, [...(workerServers.get(key) ?? []), unit.spec.id]);
}

function declares(spec: CapabilitySpec, key: string): string | undefined {
  const [member, name] = key.split('.') as [string, string];
  return spec.members[member]?.[name]?.servedBy;
}

describe('capability servers', () => {
  it.each(allCapabilityMethods().map((found) => [`${found.member}.${found.method}`, found.spec.servedBy] as const))('%s (%s) has exactly one server', (key, servedBy) => {
    const kernel = kernelServers.get(key) ?? [];
    const worker = workerServers.get(key) ?? [];
    const servers = [...kernel.map((id) => `kernel unit ${id}`), ...worker.map((id) => `worker unit ${id}`)];
    expect(servers, `${key} is declared ${servedBy}-served`).toHaveLength(1);
    if (servedBy === 'kernel') expect(kernel).toHaveLength(1);
    else expect(worker).toHaveLength(1);
  });

  it('each unit serves only methods its own declaration declares, where it declares them served', () => {
    const wrong: string[] = [];
    for (const unit of KERNEL_UNITS) {
      for (const key of servedMethods(unit.serves ?? {})) if (declares(unit.spec, key) !== 'kernel') wrong.push(`kernel unit ${unit.spec.id}: ${key}`);
      for (const [member, methods] of Object.entries(unit.internal ?? {})) {
        for (const [name, entry] of Object.entries(methods)) {
          if (!entry.checkedAs || declares(unit.spec, entry.checkedAs) !== 'database') wrong.push(`kernel unit ${unit.spec.id}: internal ${member}.${name} is not checked as one of its database methods`);
        }
      }
    }
    for (const unit of WORKER_UNITS) {
      for (const key of servedMethods(unit.serve(services))) if (!['worker', 'database'].includes(declares(unit.spec, key) ?? '')) wrong.push(`worker unit ${unit.spec.id}: ${key}`);
    }
    expect(wrong).toEqual([]);
  });

  it('each capability has at most one unit on each side, and every unit names a declared capability', () => {
    const declared = new Set((CAPABILITIES as readonly CapabilitySpec[]).map((spec) => spec));
    for (const units of [KERNEL_UNITS, WORKER_UNITS]) {
      const ids = units.map((unit) => unit.spec.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const unit of units) expect(declared.has(unit.spec), unit.spec.id).toBe(true);
    }
  });

  it('a bridge function is granted by exactly one capability', () => {
    const signatures = KERNEL_UNITS.flatMap((unit) => unit.bridgeFunctions ?? []);
    expect(new Set(signatures).size).toBe(signatures.length);
  });

  it('deriving a table refuses a method registered twice', () => {
    const [first] = KERNEL_UNITS.filter((unit) => unit.serves);
    expect(() => brokerTable([...KERNEL_UNITS, kernelUnit(first!.spec, { serves: first!.serves! })])).toThrow(/served by two kernel units/);
    const [worker] = WORKER_UNITS;
    expect(() => workerTable([...WORKER_UNITS, workerUnit(worker!.spec, worker!.serve)], services)).toThrow(/served by two worker units/);
  });

  // One folder per declaration holds everything that serves it (kernel/host/README.md, "Adding a capability").
  const FOLDERS = new URL('../../kernel/host/capabilities/', import.meta.url);
  const folders = readdirSync(FOLDERS, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
  const sideOf = (folder: string, side: 'kernel' | 'worker') => readdirSync(new URL(`${folder}/`, FOLDERS)).includes(`${side}.ts`);

  it('each capability folder is named after its declaration and its kernel.ts and worker.ts are the units listed', async () => {
    const kernelSides = folders.filter((folder) => sideOf(folder, 'kernel'));
    const workerSides = folders.filter((folder) => sideOf(folder, 'worker'));
    expect(folders.filter((folder) => !sideOf(folder, 'kernel') && !sideOf(folder, 'worker'))).toEqual([]);
    for (const folder of kernelSides) {
      const { kernelSide } = await import(`../../kernel/host/capabilities/${folder}/kernel.ts`);
      expect(kernelSide.spec.id.replaceAll('.', '-'), folder).toBe(folder);
      expect(KERNEL_UNITS.includes(kernelSide), `${folder}/kernel.ts is loaded by capabilities/units.ts`).toBe(true);
    }
    for (const folder of workerSides) {
      const { workerSide } = await import(`../../kernel/host/capabilities/${folder}/worker.ts`);
      expect(workerSide.spec.id.replaceAll('.', '-'), folder).toBe(folder);
      expect(WORKER_UNITS.includes(workerSide), `${folder}/worker.ts is loaded by capabilities/worker-units.ts`).toBe(true);
    }
    expect(KERNEL_UNITS).toHaveLength(kernelSides.length);
    expect(WORKER_UNITS).toHaveLength(workerSides.length);
  });

  it("a folder's bridge.sql defines exactly the bridge functions its kernel unit grants", async () => {
    const sources = await bridgeSources();
    for (const unit of KERNEL_UNITS) {
      const folder = unit.spec.id.replaceAll('.', '-');
      const granted = [...new Set((unit.bridgeFunctions ?? []).map((signature) => /^keel_bridge\.([a-z_0-9]+)\(/.exec(signature)![1]))].sort();
      const defined = [...(sources.find((entry) => entry.source === `${folder}/bridge.sql`)?.functions ?? [])].sort();
      expect(defined, folder).toEqual(granted);
    }
    expect(sources.every((entry) => KERNEL_UNITS.some((unit) => `${unit.spec.id.replaceAll('.', '-')}/bridge.sql` === entry.source))).toBe(true);
  });

  it("the worker's bundle holds no kernel side of a capability", async () => {
    const result = await build({ ...workerBundleOptions(), metafile: true });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((input) => input.endsWith('capabilities/worker-units.ts'))).toBe(true);
    expect(inputs.filter((input) => /kernel\/host\/capabilities\/([^/]+\/kernel\.ts|units\.ts|capability-host\.ts)$/.test(input))).toEqual([]);
    // The bundle's list is every folder's worker.ts, found when it is built.
    expect(folders.filter((folder) => sideOf(folder, 'worker')).filter((folder) => !inputs.some((input) => input.endsWith(`capabilities/${folder}/worker.ts`)))).toEqual([]);
  });

  it("no folder's kernel.ts imports the module that loads it (its import would wait for itself)", async () => {
    const entryPoints = folders.filter((folder) => sideOf(folder, 'kernel')).map((folder) => fileURLToPath(new URL(`${folder}/kernel.ts`, FOLDERS)));
    const result = await build({ entryPoints, outdir: 'unwritten', bundle: true, platform: 'node', format: 'esm', write: false, metafile: true, packages: 'external', logLevel: 'silent' });
    const { inputs } = result.metafile;
    const reaches = (from: string, seen = new Set<string>()): boolean => {
      if (from.endsWith('kernel/host/capabilities/units.ts')) return true;
      if (seen.has(from)) return false;
      seen.add(from);
      return (inputs[from]?.imports ?? []).some((imported) => reaches(imported.path, seen));
    };
    const kernelSides = Object.keys(inputs).filter((input) => /kernel\/host\/capabilities\/[^/]+\/kernel\.ts$/.test(input));
    expect(kernelSides).toHaveLength(folders.filter((folder) => sideOf(folder, 'kernel')).length);
    expect(kernelSides.filter((input) => reaches(input))).toEqual([]);
  });

  it("a folder's export that is not a unit made against a declaration, or sits in another folder, is refused at load", () => {
    const real = KERNEL_UNITS.find((unit) => unit.spec.id === 'agents.read')!;
    expect(checkedUnit('agents-read', 'kernel', { kernelSide: real }, isKernelUnit)).toBe(real);
    expect(() => checkedUnit('agents-read', 'kernel', { kernelsSide: real }, isKernelUnit)).toThrow('kernel/host/capabilities/agents-read/kernel.ts must export `kernelSide`');
    expect(() => checkedUnit('agents-read', 'kernel', { kernelSide: { ...real } }, isKernelUnit)).toThrow('kernel/host/capabilities/agents-read/kernel.ts must export `kernelSide`');
    expect(() => checkedUnit('agents-read', 'kernel', { kernelSide: kernelUnit({ ...real.spec }, {}) }, isKernelUnit)).toThrow("registers against a capability 'agents.read' that is not one of the declarations");
    expect(() => checkedUnit('agents-pause', 'kernel', { kernelSide: real }, isKernelUnit)).toThrow('kernel/host/capabilities/agents-pause/kernel.ts serves agents.read: its folder must be named agents-read');
  });

  it('a handler gets only the kernel and host services its unit declares', async () => {
    const probe = kernelUnit(KERNEL_UNITS[0]!.spec, {
      uses: { kernel: ['db'], host: ['plugins'] },
      serves: { probe: { seen: { run: async (call) => ({ kernel: Object.keys(call.kernel), host: Object.keys(call.host), db: call.kernel.db }) } } },
    });
    const kernel = { db: 'the database', vault: 'the vault', config: 'the configuration' };
    const host = { plugins: new Map(), invocations: new Map(), invoke: async () => null };
    const call = { plugin: 'probe', grants: [], info: {}, args: [], kernel, host, depth: 0 } as never;
    const seen = await brokerTable([probe]).probe!.methods.seen!.run(call);
    expect(seen).toEqual({ kernel: ['db'], host: ['plugins'], db: 'the database' });
    for (const unit of KERNEL_UNITS) {
      expect(Object.keys(unit.uses).every((side) => side === 'kernel' || side === 'host'), unit.spec.id).toBe(true);
    }
  });
});
