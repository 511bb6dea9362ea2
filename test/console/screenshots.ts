import { mkdir, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { startKernelProcess } from '../bench/support/kernel-process.ts';
import { launchChromium, settled, trackRequests } from './browser.ts';

/** A test plugin with a console page; its page shows, in its own sandboxed frame, that it cannot reach the console. */
const PAGE_PROBE = fileURLToPath(new URL('./fixtures/page-probe', import.meta.url));

/**
 * `npm run console:screenshots`: starts Keel as operators do (embedded PostgreSQL, the
 * first-party plugins), fills one company with agents, issues, projects, goals, costs, budget
 * policies, a secret, a backup and a plugin page, and writes a PNG of each main page of the
 * console at 1280×800 (laptop) and 390×844 (phone) into docs/console/screenshots/. A page
 * whose subject is below the fold (the budget policies, the danger zone) is scrolled to it.
 * A few pages are photographed in the dark scheme too (`*-dark-laptop.png`, `*-dark-phone.png`).
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
  const goal = await kernel.call('POST', `/api/companies/${company.id}/goals`, { title: 'Publish the yearly research digest', level: 'company', status: 'active', ownerAgentId: ceo.id });
  const teamGoal = await kernel.call('POST', `/api/companies/${company.id}/goals`, { title: 'Interview forty customers', level: 'team', status: 'active', parentId: goal.id, ownerAgentId: agents[4].id });
  await kernel.call('POST', `/api/companies/${company.id}/goals`, { title: 'Draft the interview guide', level: 'task', status: 'achieved', parentId: teamGoal.id, ownerAgentId: agents[4].id });
  await kernel.call('POST', `/api/companies/${company.id}/goals`, { title: 'Move the archive to the new store', level: 'team', status: 'planned', ownerAgentId: agents[1].id });
  const projects = [];
  for (const [name, status, lead, targetDate, color] of [['Research digest', 'in_progress', 4, '2027-01-31', '#3366cc'], ['Website refresh', 'planned', 2, '2027-03-15', '#2e8b57'], ['Data migration', 'backlog', 1, null, '#b8860b']] as const) {
    projects.push(await kernel.call('POST', `/api/companies/${company.id}/projects`, { name, status, leadAgentId: agents[lead].id, targetDate, color, goalId: goal.id, description: `${name}: planned and tracked by the agents.` }));
  }
  await kernel.call('POST', `/api/companies/${company.id}/budgets/policies`, { scopeType: 'project', scopeId: projects[0].id, amount: 50_000, warnPercent: 75 });
  await kernel.call('POST', `/api/companies/${company.id}/budgets/policies`, { scopeType: 'project', scopeId: projects[1].id, amount: 12_000, windowKind: 'calendar_month_utc', isActive: false });
  await kernel.call('PATCH', `/api/agents/${agents[1].id}/budgets`, { budgetMonthlyCents: 5_000 });
  await kernel.call('POST', '/api/instance/database-backups', {});
  await kernel.call('POST', '/api/plugins/install', { localPath: PAGE_PROBE });
  await kernel.call('POST', '/api/plugins/page-probe/enable', {});
  const digest = await kernel.call('POST', `/api/projects/${projects[0].id}/workspaces`, { name: 'digest repository', cwd: '/srv/northwind/digest', repoUrl: 'https://git.example.com/northwind/digest.git', repoRef: 'main' });
  // An execution workspace with its definitions (not started: the photographs show the page, not a running process).
  const runner = await kernel.call('POST', `/api/companies/${company.id}/execution-workspaces`, { projectWorkspaceId: digest.id, name: 'digest runner' });
  await kernel.call('PATCH', `/api/execution-workspaces/${runner.id}`, {
    runtimeServices: [{ id: 'preview', name: 'Preview server', command: '/usr/bin/npm', args: ['run', 'preview'], port: 4173, url: 'http://localhost:4173' }],
    workspaceCommands: [{ id: 'build', name: 'Build the digest', command: '/usr/bin/npm', args: ['run', 'build'], timeoutSec: 600 }],
  });
  const issues = await kernel.call('GET', `/api/companies/${company.id}/issues`);
  await kernel.call('POST', `/api/issues/${issues[0].id}/comments`, { body: 'First pass is done; the figures need a second look.' });

  // [file name, console path, heading to scroll to (for a subject below the fold)]
  const pages: Array<[string, string, string?]> = [
    ['companies', '/companies'], ['dashboard', `/companies/${company.id}/dashboard`], ['inbox', `/companies/${company.id}/inbox`], ['hire-wizard', `/companies/${company.id}/agents/new`], ['company-settings', `/companies/${company.id}/settings`], ['company-danger-zone', `/companies/${company.id}/settings`, 'Danger zone'],
    ['agents', `/companies/${company.id}/agents`], ['agent', `/companies/${company.id}/agents/${agents[1].id}`], ['issues-board', `/companies/${company.id}/issues`],
    ['issue', `/companies/${company.id}/issues/${issues[0].id}`], ['projects', `/companies/${company.id}/projects`], ['project', `/companies/${company.id}/projects/${projects[0].id}`],
    ['project-workspaces', `/companies/${company.id}/projects/${projects[0].id}`, 'Workspaces'],
    ['goals', `/companies/${company.id}/goals`], ['workspaces', `/companies/${company.id}/workspaces`], ['execution-workspace', `/companies/${company.id}/workspaces/${runner.id}`], ['members', `/companies/${company.id}/members`],
    ['feedback', `/companies/${company.id}/feedback`], ['runs', `/companies/${company.id}/runs`], ['approvals', `/companies/${company.id}/approvals`],
    ['costs', `/companies/${company.id}/costs`], ['budget-policies', `/companies/${company.id}/costs`, 'Policies'],
    ['secrets', `/companies/${company.id}/secrets`], ['skills', `/companies/${company.id}/skills`], ['activity', `/companies/${company.id}/activity`],
    ['plugin-page', `/companies/${company.id}/pages/page-probe/report`], ['plugins', '/plugins'], ['instance', '/settings'], ['instance-backups', '/settings', 'Backups'],
  ];
  await rm(OUT, { recursive: true, force: true });
  await mkdir(OUT, { recursive: true });
  const dark = new Set(['dashboard', 'issues-board', 'agent', 'costs', 'activity']);
  const passes = [...SIZES.map((size) => ({ size, scheme: 'light' as const, suffix: size.name })), ...SIZES.map((size) => ({ size, scheme: 'dark' as const, suffix: `dark-${size.name}` }))];
  for (const { size, scheme, suffix } of passes) {
    const context = await browser.newContext({ viewport: { width: size.width, height: size.height }, deviceScaleFactor: 1, colorScheme: scheme });
    trackRequests(context);
    const page = await context.newPage();
    for (const [name, path, scrollTo] of pages) {
      if (scheme === 'dark' && !dark.has(name)) continue;
      await page.goto(kernel.url + path);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await settled(page);
      if (scrollTo) await page.getByRole('heading', { name: scrollTo, exact: true }).first().evaluate((heading) => heading.scrollIntoView({ block: 'start' }));
      await page.screenshot({ path: `${OUT}${name}-${suffix}.png` });
      console.log(`${name}-${suffix}.png`);
    }
    await context.close();
  }
  console.log(`screenshots written to ${OUT}`);
} finally {
  await browser.close();
  await kernel.stop();
}
