import type { Browser } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath } from '../console/browser.ts';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * The attack as a browser performs it: the operator opens a page on the attacker's name, whose
 * DNS answer then turns to 127.0.0.1. From then on the page's own-origin requests reach Keel's
 * port, carrying the attacker's name in Host and Origin. Chromium resolves the name to 127.0.0.1
 * here (`--host-resolver-rules`), and the first document is served by the test (as the
 * attacker's server served it before the rebinding); every later request goes to Keel.
 * Chromium's own prompt for a public page reaching a loopback address is off, as in browsers
 * that have none.
 */
let t: TestKernel;
let browser: Browser;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api, { name: 'Operator Co' });
  browser = await chromium.launch({
    executablePath: chromiumPath(), headless: true,
    args: [
      '--no-sandbox', '--disable-dev-shm-usage', '--host-resolver-rules=MAP attacker.example 127.0.0.1',
      // Chromium asks the user before a public page reaches a loopback address (Local Network
      // Access); other browsers do not, and a user may say yes: Keel must hold without it.
      '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessRespectPreflightResults',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

describe('a DNS-rebinding page in a real browser', () => {
  it('cannot create a process agent nor read the API', async () => {
    const port = new URL(t.url).port;
    const origin = `http://attacker.example:${port}`;
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.route(`${origin}/`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>cute cats</title>' }));
    await page.goto(`${origin}/`);
    const outcome = await page.evaluate(async (companyId) => {
      const hire = await fetch(`/api/companies/${companyId}/agents`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Pwned', adapterType: 'process', adapterConfig: { command: 'sh', args: ['-c', 'id > /tmp/keel-rebinding-proof'] } }),
      });
      const read = await fetch('/api/companies');
      return { hire: { status: hire.status, body: await hire.json() }, read: { status: read.status, body: await read.json() } };
    }, company.id);
    await context.close();

    expect(outcome.hire.status).toBe(403);
    expect(outcome.hire.body.code).toBe('host_not_allowed');
    expect(outcome.read.status).toBe(403);
    expect(JSON.stringify(outcome.read.body)).not.toContain(company.id);
    const { rows } = await t.sql.query('select count(*)::int as n from agents where company_id = $1', [company.id]);
    expect(rows[0].n).toBe(0);
  });
});
