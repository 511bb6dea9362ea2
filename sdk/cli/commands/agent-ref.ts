import type { KeelClient } from '../../client/index.ts';
import { CliError } from '../errors.ts';
import { optionalCompanyId, type GlobalOptions } from '../session.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface AgentRecord { id: string; companyId: string; name: string; urlKey?: string; status: string; [field: string]: unknown }

/**
 * An agent named by id or by shortname (its `urlKey`). A shortname is only unique within a
 * company, so it needs one (-C, KEEL_COMPANY_ID or the profile); the server resolves it.
 */
export async function resolveAgent(client: KeelClient, ref: string, options: GlobalOptions): Promise<AgentRecord> {
  const companyId = optionalCompanyId(options);
  if (!UUID.test(ref) && !companyId) throw new CliError('company_required', `${JSON.stringify(ref)} is not an agent id; a shortname needs a company: pass -C/--company-id <id>`);
  return client.get<AgentRecord>(`/api/agents/${encodeURIComponent(ref)}`, UUID.test(ref) ? undefined : { companyId });
}

/** The agent's id: a uuid as given (the server checks it), a shortname resolved first. */
export async function agentId(client: KeelClient, ref: string, options: GlobalOptions): Promise<string> {
  return UUID.test(ref) ? ref : (await resolveAgent(client, ref, options)).id;
}

export const path = (template: TemplateStringsArray, ...values: string[]): string =>
  template.reduce((out, part, index) => out + part + (index < values.length ? encodeURIComponent(values[index]!) : ''), '');
