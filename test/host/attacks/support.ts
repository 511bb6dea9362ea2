import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { installAndEnable as enableFixture, installPlugin, pluginVariant } from '../../support/plugins.ts';

/** Hostile fixture plugins live in test/host/fixtures/attack-*. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

export const install = installPlugin;

export function installAndEnable(t: TestKernel, name: string, grant?: string[]): Promise<string> {
  return enableFixture(t, fixture(name), grant);
}

/** A copy of a hostile fixture with its manifest changed (see pluginVariant). */
export function variant(name: string, change: (manifest: any) => unknown, rawManifest?: string): Promise<string> {
  return pluginVariant(fixture(name), change, rawManifest);
}

/**
 * The kernel's own health, which no plugin attack may disturb: its database, notifications and
 * jobs stay up, so health answers 200. The attacked plugin itself may show as down (health is
 * then `degraded`, naming it) while it restarts after the attack.
 */
export function expectKernelComponentsUp(health: { status: number; body: any }): void {
  expect(health.status, JSON.stringify(health.body)).toBe(200);
  const { database, notifications, jobs } = health.body.components;
  expect({ database: database.status, notifications: notifications.status, jobs: jobs.status }).toEqual({ database: 'up', notifications: 'up', jobs: 'up' });
}

/** The kernel's own answers, which no plugin attack may disturb. */
export async function expectKernelAlive(t: TestKernel): Promise<void> {
  const [health, companies] = await Promise.all([t.api.get('/api/health'), t.api.get('/api/companies')]);
  expectKernelComponentsUp(health);
  expect(companies.status, companies.text).toBe(200);
}

/** Plugin output that must never show the host's files, stacks or internals. */
export const HOST_LEAK = /\/work\/|node_modules|file:\/\/|worker-main|\.ts:\d|at [A-Za-z.<>]+ \(|node:internal|isolated-vm boundary/;

export async function waitFor<T>(probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  let last = await probe();
  while (!ok(last) && Date.now() - started < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await probe();
  }
  return last;
}
