import { useEffect, useRef, useState } from 'react';
import { api, isStatus, type Company, type Me } from './api.ts';
import { ClaimBanner, CliAuthApprove, SignIn } from './auth.tsx';
import { Link, match, navigate, usePath } from './router.tsx';
import { ErrorNote, Loading, useLoad } from './ui.tsx';
import { CompaniesPage } from './pages/companies.tsx';
import { DashboardPage } from './pages/dashboard.tsx';
import { CompanySettingsPage } from './pages/company-settings.tsx';
import { AgentPage, AgentsPage } from './pages/agents.tsx';
import { IssuePage, IssuesPage } from './pages/issues.tsx';
import { RunPage, RunsPage } from './pages/runs.tsx';
import { CostsPage } from './pages/costs.tsx';
import { SecretsPage } from './pages/secrets.tsx';
import { ModelProvidersPage } from './pages/model-providers.tsx';
import { ActivityPage } from './pages/activity.tsx';
import { PluginPage, PluginsPage } from './pages/plugins.tsx';
import { SettingsPage } from './pages/settings.tsx';
import { ApprovalsPage } from './pages/approvals.tsx';
import { SkillsPage } from './pages/skills.tsx';
import { ProjectPage, ProjectsPage } from './pages/projects.tsx';
import { GoalsPage } from './pages/goals.tsx';
import { matchPluginPage, PluginPageLinks, PluginPageView } from './pages/plugin-pages.tsx';
import { WorkspacesPage } from './pages/workspaces.tsx';
import { ExecutionWorkspacePage } from './pages/execution-workspace.tsx';
import { FeedbackPage } from './pages/feedback.tsx';
import { MembersPage } from './pages/members.tsx';
import { HireWizard } from './pages/hire-wizard.tsx';
import { InboxPage } from './pages/inbox.tsx';
import { UnreadBadge } from './inbox/unread-badge.tsx';
import { Icon, sectionIcon } from './icons.tsx';
import { ColourSchemeToggle } from './theme.tsx';

type Session = { state: 'loading' } | { state: 'signed-out' } | { state: 'signed-in'; me: Me; mode: string } | { state: 'failed'; error: unknown };

/** Who is using the console: the local board (local_trusted), a browser session, or nobody yet. */
function useSession(): [Session, () => void] {
  const [session, setSession] = useState<Session>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    (async () => {
      // Both at once: the first paint waits for the slower of the two, not their sum.
      const health = api.get<{ deploymentMode: string }>('/api/health').catch(() => ({ deploymentMode: 'unknown' }));
      try {
        const [me, { deploymentMode }] = await Promise.all([api.get<Me>('/api/cli-auth/me'), health]);
        if (live) setSession({ state: 'signed-in', me, mode: deploymentMode });
      } catch (error) {
        if (live) setSession(isStatus(error, 401) || isStatus(error, 403) ? { state: 'signed-out' } : { state: 'failed', error });
      }
    })();
    return () => { live = false; };
  }, [tick]);
  // Asking again starts from nothing: the old identity must not keep rendering (or redirecting) meanwhile.
  return [session, () => { setSession({ state: 'loading' }); setTick((n) => n + 1); }];
}

export function App() {
  const path = usePath();
  const [session, refresh] = useSession();
  if (session.state === 'loading') return <main id="main" className="auth"><Loading what="Keel" /></main>;
  if (session.state === 'failed') return <main id="main" className="auth"><h1>Keel</h1><ErrorNote error={session.error} /></main>;
  if (session.state === 'signed-out') return <SignIn onSignedIn={refresh} />;
  return <Shell me={session.me} mode={session.mode} path={path} refresh={refresh} />;
}

const SECTIONS = [
  ['dashboard', 'Dashboard'], ['inbox', 'Inbox'], ['agents', 'Agents'], ['issues', 'Issues'], ['projects', 'Projects'], ['goals', 'Goals'], ['runs', 'Runs'], ['approvals', 'Approvals'],
  ['costs', 'Costs'], ['secrets', 'Secrets'], ['model-providers', 'Model providers'], ['skills', 'Skills'], ['activity', 'Activity'],
  ['workspaces', 'Workspaces'], ['feedback', 'Feedback'], ['members', 'Members'], ['settings', 'Settings'],
] as const;

function Shell({ me, mode, path, refresh }: { me: Me; mode: string; path: string; refresh: () => void }) {
  const companies = useLoad(() => api.get<Company[]>('/api/companies'), [path === '/companies' ? path : '']);
  const [menuOpen, setMenuOpen] = useState(false);
  const companyId = /^\/companies\/([^/?]+)/.exec(path)?.[1];
  const company = companies.data?.find((c) => c.id === companyId);
  const menuButton = useRef<HTMLButtonElement>(null);
  useEffect(() => { setMenuOpen(false); }, [path]);
  // Escape closes the open menu (on narrow screens), wherever the focus is, and gives the focus back to its button.
  useEffect(() => {
    if (!menuOpen) return;
    const close = (event: globalThis.KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      setMenuOpen(false);
      menuButton.current?.focus();
    };
    window.addEventListener('keydown', close);
    return () => window.removeEventListener('keydown', close);
  }, [menuOpen]);
  useEffect(() => {
    if (path === '/' && companies.data) navigate(companies.data[0] ? `/companies/${companies.data[0].id}/dashboard` : '/companies', true);
  }, [path, companies.data]);
  const signOut = async () => { await api.post('/api/auth/sign-out', {}).catch(() => undefined); navigate('/', true); refresh(); };
  return (
    <div className="shell">
      <a className="skip" href="#main">Skip to content</a>
      <header className="top">
        <button ref={menuButton} type="button" className="menu" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}><Icon name={menuOpen ? 'close' : 'menu'} />Menu</button>
        <Link to="/" className="brand">Keel</Link>
        <label className="company-switch">
          <span className="sr-only">Company</span>
          <select value={companyId ?? ''} onChange={(event) => navigate(event.target.value ? `/companies/${event.target.value}/dashboard` : '/companies')}>
            <option value="">All companies</option>
            {(companies.data ?? []).map((c) => <option key={c.id} value={c.id}>{c.name}</option>)}
          </select>
        </label>
        <span className="who">{me.source === 'local_implicit' ? 'Local board' : me.user.email ?? me.user.name ?? me.userId}</span>
        <ColourSchemeToggle />
        {mode === 'authenticated' && me.source === 'session' ? <button type="button" onClick={signOut}>Sign out</button> : null}
      </header>
      <nav id="nav" className={menuOpen ? 'side open' : 'side'} aria-label="Main">
        <ul>
          <li><Link to="/companies" aria-current={path === '/companies' ? 'page' : undefined}><Icon name="companies" />Companies</Link></li>
          {company ? SECTIONS.map(([section, label]) => {
            const to = `/companies/${company.id}/${section}`;
            return <li key={section}><Link to={to} aria-current={path.startsWith(to) ? 'page' : undefined}><Icon name={sectionIcon(section)} />{label}{section === 'inbox' ? <UnreadBadge companyId={company.id} path={path} /> : null}</Link></li>;
          }) : null}
          {company ? <PluginPageLinks companyId={company.id} path={path} /> : null}
          <li><Link to="/plugins" aria-current={path.startsWith('/plugins') ? 'page' : undefined}><Icon name="plugins" />Plugins</Link></li>
          <li><Link to="/settings" aria-current={path.startsWith('/settings') ? 'page' : undefined}><Icon name="instance" />Instance</Link></li>
        </ul>
      </nav>
      <main id="main" className="content" tabIndex={-1}>
        <ClaimBanner me={me} onClaimed={refresh} />
        <Route path={path} reloadCompanies={companies.reload} company={company} />
      </main>
    </div>
  );
}

function Route({ path, reloadCompanies, company }: { path: string; reloadCompanies: () => Promise<void>; company: Company | undefined }) {
  let params: Record<string, string> | null;
  if ((params = match('/cli-auth/:id', path))) return <CliAuthApprove id={params.id!} />;
  if (match('/companies', path) || match('/', path)) return <CompaniesPage onChange={reloadCompanies} />;
  if ((params = match('/companies/:companyId/dashboard', path))) return <DashboardPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/settings', path))) return <CompanySettingsPage companyId={params.companyId!} onChange={reloadCompanies} />;
  if ((params = match('/companies/:companyId/inbox', path))) return <InboxPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/agents', path))) return <AgentsPage companyId={params.companyId!} company={company} />;
  if ((params = match('/companies/:companyId/agents/new', path))) return <HireWizard companyId={params.companyId!} company={company} />;
  if ((params = match('/companies/:companyId/agents/:agentId', path))) return <AgentPage companyId={params.companyId!} agentId={params.agentId!} />;
  if ((params = match('/companies/:companyId/issues', path))) return <IssuesPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/issues/:issueId', path))) return <IssuePage companyId={params.companyId!} issueId={params.issueId!} />;
  if ((params = match('/companies/:companyId/projects', path))) return <ProjectsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/projects/:projectId', path))) return <ProjectPage companyId={params.companyId!} projectId={params.projectId!} />;
  if ((params = match('/companies/:companyId/goals', path))) return <GoalsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/runs', path))) return <RunsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/runs/:runId', path))) return <RunPage companyId={params.companyId!} runId={params.runId!} />;
  if ((params = match('/companies/:companyId/approvals', path))) return <ApprovalsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/costs', path))) return <CostsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/secrets', path))) return <SecretsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/model-providers', path))) return <ModelProvidersPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/skills', path))) return <SkillsPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/activity', path))) return <ActivityPage companyId={params.companyId!} />;
  const pluginPage = matchPluginPage(path);
  if (pluginPage) return <PluginPageView {...pluginPage} />;
  if ((params = match('/companies/:companyId/workspaces', path))) return <WorkspacesPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/workspaces/:workspaceId', path))) return <ExecutionWorkspacePage companyId={params.companyId!} workspaceId={params.workspaceId!} />;
  if ((params = match('/companies/:companyId/feedback', path))) return <FeedbackPage companyId={params.companyId!} />;
  if ((params = match('/companies/:companyId/members', path))) return <MembersPage companyId={params.companyId!} />;
  if (match('/plugins', path)) return <PluginsPage />;
  if ((params = match('/plugins/:key', path))) return <PluginPage pluginKey={params.key!} />;
  if (match('/settings', path)) return <SettingsPage />;
  return <section><h1>Not found</h1><p>Nothing in the console is at {path}. <Link to="/companies">Companies</Link></p></section>;
}
