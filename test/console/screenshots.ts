import { mkdir, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { startKernelProcess } from '../bench/support/kernel-process.ts';
import { launchChromium } from './browser.ts';

/**
 * `npm run console:screenshots`: starts Keel as operators do (embedded PostgreSQL, the
 * first-party plugins), fills one company with agents, issues, costs and a secret, and writes
 * a PNG of each main page of the console at 1280×800 (laptop) and 390×844 (phone) into
 * docs/console/screenshots/.
 */
const OUT = fileURLToPath(new URL('../../docs/console/screenshots/', import.meta.url));
const SIZES = [{ name: 'laptop', width: 1280, height: 800 }, { name: 'phone', width: 390, height: 844 }] as const;

const kernel = await startKernelProcess();
const browser = await launchChromium();
try {
  const company = await kernel.call('POST', '/api/companies', { name: 'Northwind Labs', description: 'Research and writing, run by agents.' });
  const ceo = await kernel.call('POST', `/api/companies/${company.id}/agents`, { name: 'Ada', role: 'ceo', title: 'Chief executive', adapterType: 'process', adapterConfig: { command: 'node', args: ['agent.mjs'] } });
  const agents = [ceo];
  for (const [name, role, title] of [['Grace', 'cto', 'Chief technologist'], ['Linus', 'engineer', 'Engineer'], ['Margaret', 'engineer', 'Engineer'], ['Alan', 'researcher', 'Researcher']] as const) {
    agents.push(await kernel.call('POST', `/api/companies/${company.id}/agents`, { name, role, title, reportsTo: role === 'engineer' ? agents[1]?.id ?? ceo.id : ceo.id, adapterType: 'process', adapterConfig: { command: 'node', args: ['agent.mjs'] } }));
  }
  const statuses = ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'blocked'];
  const titles = ['Draft the quarterly report', 'Review the onboarding flow', 'Fix the flaky import job', 'Write the launch note', 'Summarise customer interviews', 'Audit the secrets in use',
    'Plan the data migration', 'Triage support tickets', 'Benchmark the search index', 'Update the pricing page', 'Prepare the board deck', 'Refresh the style guide'];
  for (const [index, title] of titles.entries()) {
    await kernel.call('POST', `/api/companies/${company.id}/issues`, { title, status: statuses[index % statuses.length], priority: ['high', 'medium', 'low'][index % 3], assigneeAgentId: agents[index % agents.length].id });
  }
  const day = 86_400_000;
  for (let index = 0; index < 24; index++) {
    await kernel.call('POST', `/api/companies/${company.id}/cost-events`, {
      agentId: agents[index % agents.length].id, provider: ['anthropic', 'openai', 'local'][index % 3], model: 'model-a', costCents: 40 + (index * 37) % 300,
      occurredAt: new Date(Date.now() - (index % 12) * day).toISOString(),
    });
  }
  await kernel.call('PATCH', `/api/companies/${company.id}/budgets`, { budgetMonthlyCents: 20_000 });
  await kernel.call('POST', `/api/companies/${company.id}/secrets`, { name: 'SEARCH_API_KEY', value: 'not-a-real-key', description: 'Search provider key for the researcher' });
  const issues = await kernel.call('GET', `/api/companies/${company.id}/issues`);
  await kernel.call('POST', `/api/issues/${issues[0].id}/comments`, { body: 'First pass is done; the figures need a second look.' });

  const pages: Array<[string, string]> = [
    ['companies', '/companies'], ['dashboard', `/companies/${company.id}/dashboard`], ['agents', `/companies/${company.id}/agents`],
    ['agent', `/companies/${company.id}/agents/${agents[1].id}`], ['issues-board', `/companies/${company.id}/issues`],
    ['issue', `/companies/${company.id}/issues/${issues[0].id}`], ['runs', `/companies/${company.id}/runs`], ['costs', `/companies/${company.id}/costs`],
    ['secrets', `/companies/${company.id}/secrets`], ['skills', `/companies/${company.id}/skills`], ['activity', `/companies/${company.id}/activity`], ['plugins', '/plugins'], ['instance', '/settings'],
  ];
  await rm(OUT, { recursive: true, force: true });
  await mkdir(OUT, { recursive: true });
  for (const size of SIZES) {
    const context = await browser.newContext({ viewport: { width: size.width, height: size.height }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    for (const [name, path] of pages) {
      await page.goto(kernel.url + path);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: `${OUT}${name}-${size.name}.png` });
      console.log(`${name}-${size.name}.png`);
    }
    await context.close();
  }
  console.log(`screenshots written to ${OUT}`);
} finally {
  await browser.close();
  await kernel.stop();
}
