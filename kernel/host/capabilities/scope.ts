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
    throw new KeelError(403, 'cross_company_denied', `${call.plugin}: ${what} belongs to another company than the one this call serves`);
  }
}

export function uuidArg(value: unknown, name: string): string {
  if (!isUuid(value)) throw new KeelError(400, 'invalid_arguments', `${name} must be a uuid`);
  return value.toLowerCase();
}
