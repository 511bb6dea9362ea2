import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { launchChromium, openConsolePage, poll, seriousViolations, settled, unexpectedErrors } from './browser.ts';
import { fillConsoleWorld } from './console-world.ts';

const UI_TIMEOUT = 20_000;
const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

/**
 * The console's look, in a real browser against a real kernel with the first-party plugins:
 * every page (filled and empty) has no serious or critical axe-core violation at 1280 and
 * 390 px in the light and the dark scheme, and fits a 390-wide screen; the scheme follows the
 * browser until the toggle picks one, which the browser remembers; the keyboard reaches the
 * content by the skip link, sees where its focus is, and closes the narrow menu with Escape.
 */
describe('console: one look on every page, dark mode and the keyboard', () => {
  let t: TestKernel;
  let browser: Browser;
  let pages: Record<string, string> = {};
  const errors: string[] = [];

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    pages = await fillConsoleWorld(t);
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  /** Every page in one browser context: its serious violations and, on a phone, a page wider than the screen; by page name. */
  const walk = async (viewport: { width: number; height: number }, colorScheme: 'light' | 'dark') => {
    const { context, page, errors: pageErrors } = await openConsolePage(browser, { viewport, timeout: UI_TIMEOUT });
    await page.emulateMedia({ colorScheme });
    const problems: Record<string, unknown> = {};
    try {
      for (const [name, path] of Object.entries(pages)) {
        await page.goto(t.url + path);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await settled(page);
        // Every answer is in: a page still saying it is loading would be checked half drawn.
        expect(await page.getByRole('status').filter({ hasText: /^Loading / }).count(), name).toBe(0);
        expect(await page.evaluate(() => document.documentElement.dataset.theme), name).toBe(colorScheme);
        const violations = await seriousViolations(page);
        if (violations.length) problems[name] = violations;
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        if (width > viewport.width) problems[`${name} width`] = { path, width };
      }
    } finally {
      errors.push(...pageErrors);
      await context.close();
    }
    return problems;
  };

  it('has no serious axe-core violation on any page at 1280 px, light', async () => {
    expect(Object.keys(pages).length).toBeGreaterThan(40);
    expect(await walk(LAPTOP, 'light')).toEqual({});
  }, 600_000);

  it('has no serious axe-core violation on any page at 1280 px, dark', async () => {
    expect(await walk(LAPTOP, 'dark')).toEqual({});
  }, 600_000);

  it('has no serious axe-core violation on any page at 390 px, light, and no page is wider than the screen', async () => {
    expect(await walk(PHONE, 'light')).toEqual({});
  }, 600_000);

  it('has no serious axe-core violation on any page at 390 px, dark, and no page is wider than the screen', async () => {
    expect(await walk(PHONE, 'dark')).toEqual({});
  }, 600_000);

  const background = (page: Page) => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);

  it('follows the browser until the toggle picks a scheme, which this browser remembers', async () => {
    const { context, page, errors: pageErrors } = await openConsolePage(browser, { viewport: LAPTOP, timeout: UI_TIMEOUT });
    try {
      await page.emulateMedia({ colorScheme: 'light' });
      await page.goto(t.url + pages.dashboard);
      const toggle = page.getByRole('button', { name: 'Dark mode' });
      await poll(() => toggle.getAttribute('aria-pressed')).toBe('false');
      const light = await background(page);
      // The system turns dark: the page follows while nothing is chosen.
      await page.emulateMedia({ colorScheme: 'dark' });
      await poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      expect(await toggle.getAttribute('aria-pressed')).toBe('true');
      const dark = await background(page);
      expect(dark).not.toBe(light);
      // The operator picks light: it holds against the dark system, across a reload and another page.
      await toggle.click();
      await poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
      expect(await background(page)).toBe(light);
      // The pointer still rests on the toggle: the top bar's hover keeps its text readable.
      expect(await seriousViolations(page)).toEqual([]);
      await page.goto(t.url + pages.issues);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('light');
      expect(await page.getByRole('button', { name: 'Dark mode' }).getAttribute('aria-pressed')).toBe('false');
      expect(await page.evaluate(() => localStorage.getItem('keel.colour-scheme'))).toBe('light');
      // And the other way: dark chosen under a light system.
      await page.emulateMedia({ colorScheme: 'light' });
      await page.getByRole('button', { name: 'Dark mode' }).click();
      await poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      expect(await seriousViolations(page)).toEqual([]);
      await page.reload();
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      expect(await background(page)).toBe(dark);
    } finally {
      errors.push(...pageErrors);
      await context.close();
    }
  }, 120_000);

  it('skips to the content, shows the focus, and closes the narrow menu with Escape', async () => {
    const { context, page, errors: pageErrors } = await openConsolePage(browser, { viewport: PHONE, timeout: UI_TIMEOUT });
    try {
      await page.goto(t.url + pages.issues);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      // The skip link is the first stop, visible once focused, and moves the focus into the page.
      await page.keyboard.press('Tab');
      const skip = page.getByRole('link', { name: 'Skip to content' });
      await poll(() => skip.evaluate((element) => element === document.activeElement)).toBe(true);
      expect(await skip.evaluate((element) => element.getBoundingClientRect().left >= 0)).toBe(true);
      expect(await skip.evaluate((element) => getComputedStyle(element).outlineStyle)).not.toBe('none');
      await page.keyboard.press('Enter');
      await poll(() => page.evaluate(() => document.activeElement?.id)).toBe('main');

      // The menu opens from its button, Escape closes it and the focus goes back to the button.
      const menu = page.getByRole('button', { name: 'Menu' });
      await menu.focus();
      await page.keyboard.press('Enter');
      await poll(() => menu.getAttribute('aria-expanded')).toBe('true');
      const nav = page.getByRole('navigation', { name: 'Main' });
      await poll(() => nav.isVisible()).toBe(true);
      // From a link of the open menu, Escape closes it.
      await nav.getByRole('link', { name: 'Issues' }).focus();
      await page.keyboard.press('Escape');
      await poll(() => menu.getAttribute('aria-expanded')).toBe('false');
      expect(await nav.isVisible()).toBe(false);
      expect(await menu.evaluate((element) => element === document.activeElement)).toBe(true);
      expect(await menu.evaluate((element) => getComputedStyle(element).outlineStyle)).not.toBe('none');
    } finally {
      errors.push(...pageErrors);
      await context.close();
    }
  }, 120_000);

  it('reaches a wide table with the keyboard on a phone, inside its own frame', async () => {
    const { context, page, errors: pageErrors } = await openConsolePage(browser, { viewport: PHONE, timeout: UI_TIMEOUT });
    try {
      await page.goto(t.url + pages.runs);
      const frame = page.getByRole('region', { name: 'Runs' });
      await poll(() => frame.getByRole('row').count()).toBeGreaterThan(1);
      expect(await frame.getAttribute('tabindex')).toBe('0');
      // The table is wider than the phone; its frame scrolls, the page does not.
      expect(await frame.evaluate((element) => element.scrollWidth > element.clientWidth)).toBe(true);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(PHONE.width);
      await frame.focus();
      await page.keyboard.press('ArrowRight');
      await poll(() => frame.evaluate((element) => element.scrollLeft)).toBeGreaterThan(0);
    } finally {
      errors.push(...pageErrors);
      await context.close();
    }
  }, 60_000);

  it('logged no errors in the browser console', () => {
    // The probe page's own fetch is refused by its frame's CSP on purpose, and the browser says so.
    const probeRefused = (text: string) => /Content Security Policy/.test(text);
    expect(unexpectedErrors(errors).filter((text) => !probeRefused(text))).toEqual([]);
  });
});
