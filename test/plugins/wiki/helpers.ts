import { mkdir, mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';

export const WIKI = 'llm-wiki';
export const PACKAGE = '@keel/plugin-wiki';
export const base = `/api/plugins/${WIKI}`;

/** Installs the wiki by its package name (read from the checkout, no registry) and enables it. */
export async function installWiki(t: TestKernel): Promise<any> {
  const installed = await t.api.post('/api/plugins/install', { packageName: PACKAGE });
  expect(installed.status, installed.text).toBe(201);
  const enabled = await t.api.post(`/api/plugins/${WIKI}/enable`, {});
  expect(enabled.status, enabled.text).toBe(200);
  return installed.body;
}

/** A fresh folder mounted as the company's wiki-root. */
export async function mountWiki(t: TestKernel, companyId: string, name = 'wiki'): Promise<string> {
  const root = await realpath(await mkdtemp(join(tmpdir(), `keel-${name}-`)));
  await mkdir(root, { recursive: true });
  const res = await t.api.put(`/api/plugins/${WIKI}/companies/${companyId}/local-folders/wiki-root`, { path: root });
  expect(res.status, res.text).toBe(200);
  return root;
}

/** Runs a wiki tool as the API's caller (a board user names the company at the top too). */
export function tool(t: TestKernel, name: string, input: Record<string, unknown>, as?: string) {
  const api = as ? t.api.as(as) : t.api;
  return api.post('/api/plugins/tools/execute', { tool: `${WIKI}.${name}`, input, ...(as ? {} : { companyId: input.companyId }) });
}

/** Polls a condition that a background step (the folder watch) makes true; no fixed sleeps. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > until) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
