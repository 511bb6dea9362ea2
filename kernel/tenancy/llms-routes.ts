import type { Context } from 'koa';
import type { RouteModule } from '../http/app.ts';
import { forbidden, notFound } from '../http/errors.ts';
import { actorOf } from '../http/guards.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { ADAPTER_CATALOG, adapterDescription, AGENT_ICONS, type AdapterDescription } from '../../sdk/shared/adapter-catalog.ts';
import { agentMayManageAgents } from './agent-access.ts';
import { adapterAvailability } from './adapter-availability.ts';
import type { KernelServices } from '../services.ts';

/**
 * Plain texts an agent reads before it hires other agents: every adapter type with its
 * configuration, one adapter in detail, and the icon names. Board callers and agents allowed
 * to create agents read them; other agents get 403.
 */
export const llmsRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');
  const text = { success: 200, contentType: 'text/plain', errors: [403] as const };

  route({ method: 'GET', path: '/api/llms/agent-configuration.txt', auth: 'any', ...text, summary: 'How to configure agents: every adapter type with its fields' }, async (ctx) => {
    await assertMayHire(ctx, kernel);
    answer(ctx, configurationIndex());
  });

  route({
    method: 'GET', path: '/api/llms/agent-configuration/:adapterType.txt', auth: 'any', ...text, errors: [403, 404],
    summary: "One adapter type's configuration fields, defaults and an example",
  }, async (ctx) => {
    await assertMayHire(ctx, kernel);
    const adapter = adapterDescription(String(ctx.params.adapterType));
    if (!adapter) throw notFound(`Unknown adapter type: ${String(ctx.params.adapterType)}`);
    answer(ctx, adapterText(adapter));
  });

  route({
    method: 'GET', path: '/api/llms/agent-configuration.json', auth: 'any', success: 200, errors: [403] as const,
    summary: 'The same table as JSON: every adapter type with its fields, defaults, accepted values, an example, and whether this instance can run it now (`availability`: status, reason, install hint); the console\'s hiring wizard reads it',
  }, async (ctx) => {
    await assertMayHire(ctx, kernel);
    const availability = await adapterAvailability(kernel, ADAPTER_CATALOG);
    ctx.body = { adapterTypes: ADAPTER_CATALOG.map((adapter) => ({ ...adapter, availability: availability.get(adapter.type)! })) };
  });

  route({ method: 'GET', path: '/api/llms/agent-icons.txt', auth: 'any', ...text, summary: 'Icon names an agent may be given' }, async (ctx) => {
    await assertMayHire(ctx, kernel);
    answer(ctx, ['# Agent icons', '', 'Set an agent\'s `icon` to one of these names:', '', ...AGENT_ICONS.map((name) => `- ${name}`), ''].join('\n'));
  });
};

async function assertMayHire(ctx: Context, kernel: KernelServices): Promise<void> {
  const actor = actorOf(ctx);
  if (actor.kind === 'board') return;
  if (actor.kind === 'agent' && await agentMayManageAgents(kernel.db, actor.agentId, actor.companyId)) return;
  throw forbidden('Missing permission: reading agent configuration guides requires the agents:create grant (or permissions.canCreateAgents)', 'permission_denied', { permission: 'agents:create' });
}

function answer(ctx: Context, body: string): void {
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = body;
}

function configurationIndex(): string {
  const lines = [
    '# Agent configuration',
    '',
    'Create an agent with POST /api/companies/{companyId}/agents (or hire one with POST /api/companies/{companyId}/agent-hires) and a JSON body:',
    '',
    '- `name` (required), `role`, `title`, `icon`, `capabilities` (free text), `reportsTo` (agent id),',
    '- `adapterType` and `adapterConfig` (below), `budgetMonthlyCents`, `desiredSkills`, `metadata`,',
    '- `runtimeConfig.heartbeat`: `enabled` (default false) and `intervalSec` wake the agent on a timer.',
    '',
    'Secrets never go into a configuration as text: store them with POST /api/companies/{companyId}/secrets and reference them in `adapterConfig.env` as {"type": "secret_ref", "secretId": "<uuid>", "version": "latest"}.',
    '',
    '## Adapter types',
    '',
    ...ADAPTER_CATALOG.map((adapter) => `- \`${adapter.type}\`: ${adapter.summary} Details: /api/llms/agent-configuration/${adapter.type}.txt`),
    '',
    'Icons: /api/llms/agent-icons.txt',
    '',
  ];
  return lines.join('\n');
}

function adapterText(adapter: AdapterDescription): string {
  const lines = [
    `# Adapter \`${adapter.type}\``,
    '',
    adapter.summary,
    '',
    '## adapterConfig fields',
    '',
    ...adapter.fields.map((field) => {
      const traits = [field.type, field.required ? 'required' : 'optional', ...(field.default !== undefined ? [`default ${field.default}`] : []),
        ...(field.values ? [`one of ${field.values.join(', ')}`] : [])];
      return `- \`${field.name}\` (${traits.join(', ')}): ${field.notes}`;
    }),
    '',
    '## Example',
    '',
    '```json',
    JSON.stringify({ name: 'Example agent', role: 'engineer', ...adapter.example }, null, 2),
    '```',
    '',
  ];
  return lines.join('\n');
}
