import { KeelError } from '../../http/errors.ts';
import { isUuid } from '../../http/validate.ts';
import type { BrokeredCall } from './types.ts';

/**
 * Cross-tenant guard for kernel capabilities: a call made while serving company X may only
 * touch company X. Invocations without a company (scheduled jobs, instance-level tools) act
 * at instance level, which the operator granted by enabling the plugin.
 */
export function assertSameCompany(call: BrokeredCall, companyId: string, what: string): void {
  if (call.info.companyId && call.info.companyId !== companyId) {
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
export const OF_CALL_COMPANY = 'company_id = coalesce(?::uuid, company_id)';

/** The company a lookup is confined to; null for an instance-level call. */
export function callCompany(call: BrokeredCall): string | null {
  return call.info.companyId ?? null;
}

export function uuidArg(value: unknown, name: string): string {
  if (!isUuid(value)) throw new KeelError(400, 'invalid_arguments', `${name} must be a uuid`);
  return value.toLowerCase();
}
