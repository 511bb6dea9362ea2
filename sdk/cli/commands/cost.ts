import { CliError, clientFor, companyIdFor, emit, emitList, emitRecord, type GlobalOptions } from '../output.ts';
import { agentId, path } from './agent-ref.ts';
import { cents } from './company.ts';
import { parsePayload } from './payload.ts';

/** Costs and budgets (plugins/costs; docs/api/costs.md). */
type Options = GlobalOptions & Record<string, any>;

const BREAKDOWNS = ['by-agent', 'by-agent-model', 'by-provider', 'by-biller', 'by-project', 'by-source', 'by-source-model'] as const;

function dollars(value: unknown): string {
  return typeof value === 'number' ? `$${(value / 100).toFixed(2)}` : '-';
}

export async function summaryCommand(options: Options): Promise<void> {
  const summary = await clientFor(options).get<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/costs/summary`, { from: options.from, to: options.to });
  emit(options, [`Spend ${dollars(summary.spendCents)} of budget ${summary.budgetCents ? dollars(summary.budgetCents) : 'none'}${summary.budgetCents ? ` (${summary.utilizationPercent}%)` : ''}`, `Period: ${summary.from ?? 'all time'} - ${summary.to ?? 'now'}`], summary);
}

export async function breakdownCommand(options: Options): Promise<void> {
  const by = options.by ?? 'agent';
  const route = `by-${by}`;
  if (!(BREAKDOWNS as readonly string[]).includes(route)) throw new CliError('usage', `--by takes ${BREAKDOWNS.map((b) => b.slice(3)).join(', ')}, got ${by}`);
  // Spend per source and model is the by-source route grouped by model.
  const query = by === 'source-model' ? { from: options.from, to: options.to, groupBy: 'model' } : { from: options.from, to: options.to };
  const rows = await clientFor(options).get<Array<Record<string, unknown>>>(path`/api/companies/${companyIdFor(options)}/costs/` + (by === 'source-model' ? 'by-source' : route), query);
  const key = {
    agent: ['agentName'], 'agent-model': ['agentName', 'provider', 'model'], provider: ['provider'], biller: ['biller'], project: ['projectId'],
    source: ['source'], 'source-model': ['source', 'provider', 'model'],
  }[by as 'agent'] ?? [];
  emitList(options, rows, [...key, ['SPEND', (r) => dollars(r.spendCents)], 'inputTokens', 'outputTokens', 'eventCount'], 'No spend');
}

export async function windowsCommand(options: Options): Promise<void> {
  const answer = await clientFor(options).get<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/costs/window-spend`);
  emitList(options, answer.windows ?? [], ['window', ['SPEND', (w) => dollars(w.spendCents)], 'eventCount', 'from', 'to'], 'No spend', answer);
}

export async function budgetOverviewCommand(options: Options): Promise<void> {
  const overview = await clientFor(options).get<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/budgets/overview`);
  if (options.json) return emit(options, '', overview);
  emitList(options, overview.policies ?? [], ['scopeType', 'scopeId', ['AMOUNT', (p) => dollars(p.amount)], ['OBSERVED', (p) => dollars(p.observedAmount)], 'utilizationPercent', 'hardStopEnabled'], 'No budget policies');
  process.stdout.write(`Active incidents: ${(overview.activeIncidents ?? []).length}; paused agents: ${overview.pausedAgentCount ?? 0}; paused projects: ${overview.pausedProjectCount ?? 0}\n`);
}

/** `budget set`: the company's monthly budget, or an agent's with --agent. */
export async function budgetSetCommand(amount: string, options: Options): Promise<void> {
  const client = clientFor(options);
  const body = { budgetMonthlyCents: cents(amount) };
  const answer = options.agent
    ? await client.patch<Record<string, any>>(path`/api/agents/${await agentId(client, options.agent, options)}/budgets`, body)
    : await client.patch<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/budgets`, body);
  emit(options, `Monthly budget of ${answer.scopeType} ${answer.scopeId}: ${dollars(answer.budgetMonthlyCents)}`, answer);
}

export async function budgetPolicyCommand(options: Options): Promise<void> {
  const policy = await clientFor(options).post<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/budgets/policies`, parsePayload(options.payloadJson));
  emitRecord(options, policy, `Budget policy ${policy.id} for ${policy.scopeType} ${policy.scopeId ?? ''}`.trimEnd());
}

export async function budgetResolveCommand(incidentId: string, options: Options): Promise<void> {
  const action = options.action;
  if (action !== 'keep_paused' && action !== 'raise_budget_and_resume') throw new CliError('usage', '--action takes keep_paused or raise_budget_and_resume');
  const body: Record<string, unknown> = { action };
  if (options.amount !== undefined) body.amount = cents(options.amount);
  if (options.note !== undefined) body.note = options.note;
  const incident = await clientFor(options).post<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/budget-incidents/${incidentId}/resolve`, body);
  emit(options, `Incident ${incident.id} is ${incident.status}${incident.resumed ? '; work resumed' : ''}`, incident);
}
