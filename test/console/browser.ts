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

/** `expect.poll` with the patience a page on a loaded machine needs (the default is one second). */
export function poll<T>(read: () => Promise<T> | T, options: { timeout?: number } = {}) {
  return expect.poll(read, { timeout: options.timeout ?? 20_000, interval: 100 });
}
