import { KeelError } from '../../http/errors.ts';
import { isUuid } from '../../http/validate.ts';
import type { BrokeredCall } from './types.ts';

/**
 * Cross-tenant guard for kernel capabilities: a call made while serving company X may only
 * touch company X. A call that serves no company (a job without perCompany, a webhook, an
 * instance-level route) reaches no company at all: the broker refuses company-scoped methods
 * for it before they run (companyScopeRequired).
 */
export function assertSameCompany(call: BrokeredCall, companyId: string, what: string): void {
  if (callCompany(call) !== companyId) {
    throw new KeelError(403, 'cross_company_denied', `${call.plugin}: ${what} is not the company this call serves`);
  }
}

/**
 * Rows a kernel capability looks up by id are looked up by id *and* the call's company, in the
 * query itself: a row of another company is then not found, exactly like an id that names
 * nothing. Same answer, same work and no lock taken on the other company's row, so a plugin
 * cannot learn that another company's agent or run exists. Use as
 * `where id = ? and ${OF_CALL_COMPANY}` with `[id, callCompany(call)]`.
 */
export const OF_CALL_COMPANY = 'company_id = ?';

/** The company the call serves; company-scoped methods only run for calls that serve one. */
export function callCompany(call: BrokeredCall): string {
  if (!call.info.companyId) throw companyScopeRequired(call.plugin, 'this capability');
  return call.info.companyId;
}

/**
 * The refusal of company data to a call that serves no company. Instance-level work reaches
 * company data only company by company: a job declared `perCompany: true` is run once per
 * company, each run serving that company alone.
 */
export function companyScopeRequired(plugin: string, what: string): KeelError {
  return new KeelError(403, 'company_scope_required',
    `${plugin}: ${what} reaches company data, and this call serves no company; declare the job perCompany: true in plugin.json to run it once per company, or serve the route under a company (companyParam or agentParam)`);
}

export function uuidArg(value: unknown, name: string): string {
  if (!isUuid(value)) throw new KeelError(400, 'invalid_arguments', `${name} must be a uuid`);
  return value.toLowerCase();
}
