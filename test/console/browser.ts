import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';
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

/** The requests of a browser context still waiting for their answer, and how many it has started. */
interface RequestTracker { inFlight: Set<Request>; started: number; changed: Set<() => void> }
const trackers = new WeakMap<BrowserContext, RequestTracker>();

/**
 * Follows the requests of a context's pages, for `settled`; from before its first page
 * navigates, so that no request goes unseen. Event streams (a run's live log) never end and
 * are not followed.
 */
export function trackRequests(context: BrowserContext): void {
  if (trackers.has(context)) return;
  const tracker: RequestTracker = { inFlight: new Set(), started: 0, changed: new Set() };
  const notify = () => { for (const listener of [...tracker.changed]) listener(); };
  const end = (request: Request) => { if (tracker.inFlight.delete(request)) notify(); };
  context.on('request', (request) => {
    if (request.resourceType() === 'eventsource' || request.resourceType() === 'websocket') return;
    tracker.inFlight.add(request);
    tracker.started++;
  });
  context.on('requestfinished', end);
  context.on('requestfailed', end);
  trackers.set(context, tracker);
}

/**
 * Waits until the page has its data: no request of its context in flight, and none started
 * over the two animation frames that follow (a render's effects ask for what the answers it
 * got call for). This awaits the answers themselves where Playwright's 'networkidle' waits for
 * half a second of silence on every page.
 */
export async function settled(page: Page, timeout = 20_000): Promise<void> {
  const tracker = trackers.get(page.context());
  if (!tracker) throw new Error('settled: the page\'s context is not tracked (open it with openConsolePage, or call trackRequests before it navigates)');
  const deadline = Date.now() + timeout;
  for (;;) {
    if (tracker.inFlight.size > 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => { tracker.changed.delete(check); reject(new Error(`settled: ${tracker.inFlight.size} requests still in flight after ${timeout} ms: ${[...tracker.inFlight].map((r) => r.url()).join(', ')}`)); }, Math.max(0, deadline - Date.now()));
        const check = () => { if (tracker.inFlight.size === 0) { clearTimeout(timer); tracker.changed.delete(check); resolve(); } };
        tracker.changed.add(check);
        check();
      });
    }
    const started = tracker.started;
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    if (tracker.inFlight.size === 0 && tracker.started === started) return;
  }
}

/** Opens each page (a path of the console under `baseUrl`) and answers its serious violations, by path; empty when none has any. */
export async function seriousViolationsOfPages(page: Page, baseUrl: string, paths: readonly string[]): Promise<Record<string, unknown>> {
  const found: Record<string, unknown> = {};
  for (const path of paths) {
    await page.goto(baseUrl + path);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await settled(page);
    const violations = await seriousViolations(page);
    if (violations.length) found[path] = violations;
  }
  return found;
}

/** `expect.poll` with the patience a page on a loaded machine needs (the default is one second). */
export function poll<T>(read: () => Promise<T> | T, options: { timeout?: number } = {}) {
  return expect.poll(read, { timeout: options.timeout ?? 20_000, interval: 100 });
}

/**
 * A browser context with the patience a loaded machine needs and one page that records the
 * console's errors and uncaught exceptions (`errors`), which a test expects to be empty at the
 * end; `keep` leaves out messages the test provokes on purpose.
 */
export async function openConsolePage(browser: Browser, options: { viewport?: { width: number; height: number }; timeout?: number; keep?: (text: string) => boolean } = {}):
Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 } });
  context.setDefaultTimeout(options.timeout ?? 20_000);
  trackRequests(context);
  const page = await context.newPage();
  const errors: string[] = [];
  const keep = options.keep ?? (() => true);
  page.on('console', (message) => { if (message.type() === 'error' && keep(message.text())) errors.push(message.text()); });
  page.on('pageerror', (error) => errors.push(error.message));
  return { context, page, errors };
}

/** A browser with one console page (see openConsolePage); `close` ends the browser and with it every context. */
export interface ConsoleBrowser {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  errors: string[];
  close(): Promise<void>;
}

/** Launches Chromium and opens the console page a test drives (the set-up every browser test shares). */
export async function startConsoleBrowser(options: Parameters<typeof openConsolePage>[1] = {}): Promise<ConsoleBrowser> {
  const browser = await launchChromium();
  try {
    return { browser, ...(await openConsolePage(browser, options)), close: () => browser.close() };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

/** The recorded errors other than the browser's report of a 4xx answer (the console shows those to the operator). */
export const unexpectedErrors = (errors: readonly string[]) => errors.filter((text) => !/status of 4\d\d/.test(text));
