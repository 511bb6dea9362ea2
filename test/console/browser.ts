import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import axe from 'axe-core';
import { expect } from 'vitest';

/**
 * Debian's Chromium (`apt-get install chromium`, which .ci/run does when it is missing), driven
 * headless through Playwright's library. `KEEL_CHROMIUM` names another binary.
 */
export function chromiumPath(): string {
  const candidates = [process.env.KEEL_CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium'].filter((path): path is string => !!path);
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new Error('Chromium is not installed: run `apt-get install -y chromium` (as .ci/run does), or set KEEL_CHROMIUM');
  return found;
}

export function launchChromium(): Promise<Browser> {
  // Root (as in CI) cannot use Chromium's own sandbox; the pages are the test's own.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<Array<{ id: string; impact: string; help: string; nodes: string[] }>> {
  // Evaluated through the DevTools protocol, which the page's CSP (no inline scripts) does not govern.
  await page.evaluate(axe.source);
  const results = await page.evaluate(async () => (window as unknown as { axe: typeof axe }).axe.run(document, { resultTypes: ['violations'] }));
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({ id: violation.id, impact: violation.impact!, help: violation.help, nodes: violation.nodes.map((node) => node.target.join(' ')) }));
}

/** Opens each page (a path of the console under `baseUrl`) and answers its serious violations, by path; empty when none has any. */
export async function seriousViolationsOfPages(page: Page, baseUrl: string, paths: readonly string[]): Promise<Record<string, unknown>> {
  const found: Record<string, unknown> = {};
  for (const path of paths) {
    await page.goto(baseUrl + path);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await page.waitForLoadState('networkidle');
    const violations = await seriousViolations(page);
    if (violations.length) found[path] = violations;
  }
  return found;
}

/** `expect.poll` with the patience a page on a loaded machine needs (the default is one second). */
export function poll<T>(read: () => Promise<T> | T, options: { timeout?: number } = {}) {
  return expect.poll(read, { timeout: options.timeout ?? 20_000, interval: 100 });
}
