import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { startCli } from '../sdk/cli-support.ts';
import { launchChromium, poll, seriousViolations } from './browser.ts';

/**
 * The console of an authenticated instance: account creation and sign-in with browser
 * sessions, the first-admin claim, and `keel auth login` approved through the console's page.
 */
describe('console: sign-in on an authenticated instance', () => {
  let t: TestKernel;
  let browser: Browser;
  let page: Page;
  let home: string;

  beforeAll(async () => {
    t = await startTestKernel({ deploymentMode: 'authenticated' });
    home = await mkdtemp(join(tmpdir(), 'keel-console-login-'));
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('shows the sign-in page to a visitor, and it passes axe-core', async () => {
    await page.goto(t.url + '/');
    await poll(() => page.getByRole('heading', { level: 2 }).textContent()).toBe('Sign in');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('refuses a wrong password with the API message', async () => {
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.getByLabel('Email').fill('nobody@example.test');
    await form.getByLabel('Password').fill('wrong-password');
    await form.getByRole('button', { name: 'Sign in' }).click();
    await poll(() => form.getByRole('alert').textContent()).toBe('Invalid email or password');
  });

  it('creates an account, claims the unclaimed instance as its first admin, and the claim is gone after', async () => {
    await page.getByRole('button', { name: 'No account yet? Create one' }).click();
    const form = page.getByRole('form', { name: 'Create an account' });
    await form.getByLabel('Name').fill('Ada Operator');
    await form.getByLabel('Email').fill('ada@example.test');
    await form.getByLabel(/^Password/).fill('password-123');
    await form.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(/\/companies$/);
    const claim = page.getByRole('region', { name: 'Claim this instance' });
    await claim.getByRole('button', { name: 'Claim first admin' }).click();
    await poll(() => claim.count()).toBe(0);
    const admins = await t.sql.query('select email from users where is_instance_admin');
    expect(admins.rows.map((row) => row.email)).toEqual(['ada@example.test']);
  });

  it('signs out and back in with a browser session', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await poll(() => page.getByRole('heading', { level: 2 }).textContent()).toBe('Sign in');
    expect(await page.evaluate(() => fetch('/api/auth/session').then((res) => res.status))).toBe(401);
    const form = page.getByRole('form', { name: 'Sign in' });
    await form.getByLabel('Email').fill('ada@example.test');
    await form.getByLabel('Password').fill('password-123');
    await form.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.waitForURL(/\/companies$/);
    // The session is the browser's HttpOnly cookie: the API knows it, the page's scripts never see it.
    expect(await page.evaluate(() => fetch('/api/auth/session').then((res) => res.status))).toBe(200);
    expect(await page.evaluate(() => document.cookie)).toBe('');
  });

  it('approves `keel auth login` on its console page, and the command line is signed in', async () => {
    const login = startCli(['auth', 'login', '--json', '--interval', '0.2', '--api-base', t.url, '--data-dir', join(home, 'keel')], { env: { HOME: home } });
    try {
      const challenge = await login.waitFor((event) => event.event === 'challenge', { timeoutMs: 30_000 });
      expect(challenge.browserUrl).toBe(`${t.url}/cli-auth/${challenge.challengeId}`);
      await page.goto(String(challenge.browserUrl));
      await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Approve command-line sign-in');
      expect(await page.getByTestId('challenge-status').textContent()).toBe('pending');
      await page.getByRole('button', { name: 'Approve' }).click();
      await poll(() => page.getByTestId('challenge-status').textContent()).toBe('approved');
      const done = await login.waitFor((event) => event.event === 'logged_in', { timeoutMs: 30_000 });
      expect(done).toMatchObject({ email: 'ada@example.test', isInstanceAdmin: true });
    } finally {
      await login.stop();
    }
  });

  it('lays out for a phone: the menu opens the navigation', async () => {
    await page.goto(t.url + '/companies');
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Menu' }).click();
    expect(await nav.isVisible()).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  });
});
