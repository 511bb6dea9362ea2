import { KeelError } from '../../http/errors.ts';
import { isUuid } from '../../http/validate.ts';
import type { BrokeredCall } from './types.ts';
import { companyScopeDenial } from '../../../sdk/capabilities/check-call.ts';

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

/** The registry's refusal of company data to a call that serves no company (the broker checks first; this is the backstop). */
function companyScopeRequired(plugin: string, what: string): KeelError {
  return new KeelError(403, 'company_scope_required', companyScopeDenial(plugin, what));
}

export function uuidArg(value: unknown, name: string): string {
  if (!isUuid(value)) throw new KeelError(400, 'invalid_arguments', `${name} must be a uuid`);
  return value.toLowerCase();
}
