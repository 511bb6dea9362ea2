import { PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';

/**
 * The work plugin's part of a company package (manifest `portability`): goals, projects and
 * issues (hidden issues and the history of comments, documents and runs are not carried).
 * Descriptions travel as markdown files; agents are named by their id in the source company
 * and mapped to the target's by the kernel (`ids.agents`). Only the kernel may call these
 * services: another plugin consuming them could otherwise write a company's work wholesale.
 */
type Row = Record<string, unknown>;
type Ids = Record<string, Record<string, string | null>>;
type Strategy = 'rename' | 'skip' | 'replace';
interface PlanItem { kind: string; key: string; name: string; action: 'create' | 'update' | 'skip'; targetName?: string; reason?: string }
interface ImportInput { mode: 'preview' | 'apply'; strategy: Strategy; data: Record<string, unknown>; files: Record<string, string>; ids: Ids }

interface GoalData { id: string; title: string; level: string; status: string; parentId: string | null; ownerAgentId: string | null; descriptionPath: string | null }
interface ProjectData { id: string; name: string; status: string; leadAgentId: string | null; goalId: string | null; targetDate: string | null; color: string | null; archived: boolean; descriptionPath: string | null }
interface IssueData { id: string; identifier: string; title: string; status: string; priority: string; projectId: string | null; goalId: string | null; parentId: string | null; assigneeAgentId: string | null; billingCode: string | null; descriptionPath: string | null }

const CHUNK = 500;

function kernelOnly(ctx: WorkContext): string {
  if (ctx.invocation.caller?.plugin !== 'kernel') throw new PluginError(403, 'kernel_only', 'Only the kernel imports and exports company packages');
  return ctx.invocation.companyId!;
}

const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60) || 'item';

export async function exportCompany(_input: unknown, ctx: WorkContext) {
  const companyId = kernelOnly(ctx);
  const files: Record<string, string> = {};
  const describe = (dir: string, name: string, description: unknown): string | null => {
    if (typeof description !== 'string' || description === '') return null;
    const path = `${dir}/${name}.md`;
    files[path] = description;
    return path;
  };
  const goals = (await ctx.db.query('select * from goals where company_id = $1 order by created_at, title, id', [companyId])).rows;
  const projects = (await ctx.db.query('select * from projects where company_id = $1 order by created_at, name, id', [companyId])).rows;
  const issues = (await ctx.db.query('select * from issues where company_id = $1 and hidden_at is null order by issue_number', [companyId])).rows;
  return {
    data: {
      goals: goals.map((g, index): GoalData => ({
        id: String(g.id), title: String(g.title), level: String(g.level), status: String(g.status), parentId: g.parent_id as string | null,
        ownerAgentId: g.owner_agent_id as string | null, descriptionPath: describe('goals', `${index + 1}-${slug(String(g.title))}`, g.description),
      })),
      projects: projects.map((p, index): ProjectData => ({
        id: String(p.id), name: String(p.name), status: String(p.status), leadAgentId: p.lead_agent_id as string | null, goalId: p.goal_id as string | null,
        targetDate: p.target_date ? String(p.target_date).slice(0, 10) : null, color: p.color as string | null, archived: p.archived_at !== null,
        descriptionPath: describe('projects', `${index + 1}-${slug(String(p.name))}`, p.description),
      })),
      issues: issues.map((i): IssueData => ({
        id: String(i.id), identifier: String(i.identifier), title: String(i.title), status: String(i.status), priority: String(i.priority),
        projectId: i.project_id as string | null, goalId: i.goal_id as string | null, parentId: i.parent_id as string | null,
        assigneeAgentId: i.assignee_agent_id as string | null, billingCode: i.billing_code as string | null,
        descriptionPath: describe('issues', String(i.identifier), i.description),
      })),
    },
    files,
  };
}

function arrayOf<T>(data: Record<string, unknown>, key: string): T[] {
  const value = data[key];
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new PluginError(422, 'invalid_package', `The work part's ${key} must be a list`);
  return value as T[];
}

/** Matches package entities to the company's by a natural key; decides create, update (replace) or skip, and the name a rename gives. */
function decide(kind: string, items: Array<{ id: string; name: string }>, existing: Map<string, string>, strategy: Strategy, renames: boolean) {
  const plan: PlanItem[] = [];
  const ids: Record<string, string | null> = {};
  const names: Record<string, string> = {};
  const taken = new Set(existing.keys());
  for (const item of items) {
    const match = existing.get(item.name.toLowerCase());
    if (!match) {
      plan.push({ kind, key: item.id, name: item.name, action: 'create' });
      ids[item.id] = null;
    } else if (strategy === 'skip') {
      plan.push({ kind, key: item.id, name: item.name, action: 'skip', reason: `${item.name} exists` });
      ids[item.id] = match;
    } else if (strategy === 'replace') {
      plan.push({ kind, key: item.id, name: item.name, action: 'update' });
      ids[item.id] = match;
    } else {
      let name = item.name;
      if (renames) for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${item.name} ${n}`;
      taken.add(name.toLowerCase());
      plan.push({ kind, key: item.id, name: item.name, action: 'create', ...(name !== item.name ? { targetName: name } : {}) });
      names[item.id] = name;
      ids[item.id] = null;
    }
  }
  return { plan, ids, names };
}

async function existingBy(ctx: WorkContext, companyId: string | null, sql: string): Promise<Map<string, string>> {
  if (!companyId) return new Map();
  const { rows } = await ctx.db.query(sql, [companyId]);
  return new Map(rows.map((row) => [String(row.name).toLowerCase(), String(row.id)]));
}

export async function importCompany(input: unknown, ctx: WorkContext) {
  if (ctx.invocation.caller?.plugin !== 'kernel') throw new PluginError(403, 'kernel_only', 'Only the kernel imports and exports company packages');
  const { mode, strategy, data, files, ids: known } = input as ImportInput;
  const companyId = ctx.invocation.companyId ?? null;
  const goals = arrayOf<GoalData>(data, 'goals');
  const projects = arrayOf<ProjectData>(data, 'projects');
  const issues = arrayOf<IssueData>(data, 'issues');
  const goalPlan = decide('goal', goals.map((g) => ({ id: g.id, name: g.title })),
    await existingBy(ctx, companyId, 'select id, title as name from goals where company_id = $1'), strategy, false);
  const projectPlan = decide('project', projects.map((p) => ({ id: p.id, name: p.name })),
    await existingBy(ctx, companyId, 'select id, name from projects where company_id = $1'), strategy, true);
  const issuePlan = decide('issue', issues.map((i) => ({ id: i.id, name: i.title })),
    await existingBy(ctx, companyId, 'select id, title as name from issues where company_id = $1 and hidden_at is null'), strategy, false);
  const plan = [...goalPlan.plan, ...projectPlan.plan, ...issuePlan.plan];
  if (mode === 'preview') return { plan, ids: { goals: goalPlan.ids, projects: projectPlan.ids, issues: issuePlan.ids } };

  const agents = known.agents ?? {};
  const agent = (id: string | null) => (id ? agents[id] ?? null : null);
  const text = (path: string | null) => (path ? files[path] ?? null : null);
  const goalIds = { ...goalPlan.ids };
  const projectIds = { ...projectPlan.ids };
  const issueIds = { ...issuePlan.ids };
  const actionOf = (items: PlanItem[]) => new Map(items.map((item) => [item.key, item.action]));

  const goalActions = actionOf(goalPlan.plan);
  for (const g of goals) {
    const action = goalActions.get(g.id);
    const values = [g.title, text(g.descriptionPath), g.level, g.status, agent(g.ownerAgentId)];
    if (action === 'create') {
      const { rows } = await ctx.db.query('insert into goals (company_id, title, description, level, status, owner_agent_id) values ($1, $2, $3, $4, $5, $6) returning id', [companyId, ...values]);
      goalIds[g.id] = String(rows[0]!.id);
    } else if (action === 'update') {
      await ctx.db.query('update goals set title = $2, description = $3, level = $4, status = $5, owner_agent_id = $6, updated_at = now() where id = $1', [goalIds[g.id], ...values]);
    }
  }
  for (const g of goals) {
    if (goalActions.get(g.id) !== 'skip' && g.parentId && goalIds[g.parentId]) await ctx.db.query('update goals set parent_id = $2 where id = $1', [goalIds[g.id], goalIds[g.parentId]]);
  }

  const projectActions = actionOf(projectPlan.plan);
  for (const p of projects) {
    const action = projectActions.get(p.id);
    const values = [projectPlan.names[p.id] ?? p.name, text(p.descriptionPath), p.status, agent(p.leadAgentId), p.goalId ? goalIds[p.goalId] ?? null : null, p.targetDate, p.color, p.archived];
    if (action === 'create') {
      const { rows } = await ctx.db.query(
        `insert into projects (company_id, name, description, status, lead_agent_id, goal_id, target_date, color, archived_at)
         values ($1, $2, $3, $4, $5, $6, $7::date, $8, case when $9::boolean then now() end) returning id`, [companyId, ...values]);
      projectIds[p.id] = String(rows[0]!.id);
    } else if (action === 'update') {
      await ctx.db.query(
        `update projects set name = $2, description = $3, status = $4, lead_agent_id = $5, goal_id = $6, target_date = $7::date, color = $8,
                archived_at = case when $9::boolean then coalesce(archived_at, now()) end, updated_at = now() where id = $1`, [projectIds[p.id], ...values]);
    }
  }

  const { agentId: actorAgentId, userId: actorUserId } = { agentId: ctx.invocation.actor.agentId ?? null, userId: ctx.invocation.actor.type === 'user' ? ctx.invocation.actor.id : null };
  const issueActions = actionOf(issuePlan.plan);
  const fields = (i: IssueData) => ({
    title: i.title, description: text(i.descriptionPath), status: i.status, priority: i.priority,
    projectId: i.projectId ? projectIds[i.projectId] ?? null : null, goalId: i.goalId ? goalIds[i.goalId] ?? null : null,
    assigneeAgentId: agent(i.assigneeAgentId), billingCode: i.billingCode,
  });
  const toCreate = issues.filter((i) => issueActions.get(i.id) === 'create');
  for (let start = 0; start < toCreate.length; start += CHUNK) {
    const slice = toCreate.slice(start, start + CHUNK);
    // One range of numbers per chunk: the company row is locked and updated once, not per issue.
    const range = await ctx.companies.nextIssueNumbers(slice.length);
    const chunk = slice.map((i, offset) => ({ source: i.id, number: range.first + offset, identifier: `${range.prefix}-${range.first + offset}`, ...fields(i) }));
    const { rows } = await ctx.db.query(
      `insert into issues (company_id, issue_number, identifier, title, description, status, priority, project_id, goal_id, assignee_agent_id,
                           billing_code, created_by_agent_id, created_by_user_id, origin_kind, origin_id, started_at, completed_at, cancelled_at)
       select $1, r.number, r.identifier, r.title, r.description, r.status, r.priority, r."projectId", r."goalId", r."assigneeAgentId",
              r."billingCode", $3, $4, 'import', r.source,
              case when r.status = 'in_progress' then now() end, case when r.status = 'done' then now() end, case when r.status = 'cancelled' then now() end
         from jsonb_to_recordset($2::jsonb) as r(source text, number int, identifier text, title text, description text, status text, priority text,
              "projectId" uuid, "goalId" uuid, "assigneeAgentId" uuid, "billingCode" text)
       returning id, origin_id`, [companyId, JSON.stringify(chunk), actorAgentId, actorUserId]);
    for (const row of rows) issueIds[String(row.origin_id)] = String(row.id);
  }
  for (const i of issues.filter((item) => issueActions.get(item.id) === 'update')) {
    const f = fields(i);
    await ctx.db.query(
      `update issues set title = $2, description = $3, status = $4, priority = $5, project_id = $6, goal_id = $7, assignee_agent_id = $8,
              assignee_user_id = case when $8::uuid is null then assignee_user_id end, billing_code = $9, updated_at = now() where id = $1`,
      [issueIds[i.id], f.title, f.description, f.status, f.priority, f.projectId, f.goalId, f.assigneeAgentId, f.billingCode]);
  }
  const parents = issues.filter((i) => issueActions.get(i.id) !== 'skip' && i.parentId && issueIds[i.parentId])
    .map((i) => ({ id: issueIds[i.id], parent: issueIds[i.parentId!] }));
  if (parents.length) {
    await ctx.db.query('update issues set parent_id = r.parent from jsonb_to_recordset($1::jsonb) as r(id uuid, parent uuid) where issues.id = r.id and issues.company_id = $2',
      [JSON.stringify(parents), companyId]);
  }
  const count = (items: PlanItem[], action: string) => items.filter((item) => item.action === action).length;
  await ctx.activity.record({
    action: 'work.imported', entityType: 'company', entityId: companyId!,
    details: {
      goals: { created: count(goalPlan.plan, 'create'), updated: count(goalPlan.plan, 'update') },
      projects: { created: count(projectPlan.plan, 'create'), updated: count(projectPlan.plan, 'update') },
      issues: { created: count(issuePlan.plan, 'create'), updated: count(issuePlan.plan, 'update') },
    },
  });
  return { plan, ids: { goals: goalIds, projects: projectIds, issues: issueIds } };
}
