import { Ajv, type ValidateFunction } from 'ajv';
import { capabilityMethod, type GrantedMethod } from './index.ts';

/**
 * The one check of a `ctx` call, used wherever a call crosses a trust boundary (the worker,
 * the kernel's broker, the SDK's test host): the method exists, a capability that grants it
 * was granted, a company-scoped method serves a company, and the arguments match the
 * declared schemas. Kept out of the registry's index so that the isolate bundle, which reads
 * the registry to build `ctx`, never carries ajv.
 */
export interface CallRefusal { status: number; code: string; message: string }

const ajv = new Ajv({ allErrors: false, strict: false });
const compiled = new Map<string, ValidateFunction[]>();

/** The denial of an ungranted method: what it needs, and the fix. */
export function capabilityDenial(plugin: string, member: string, method: string, grantedBy: readonly string[]): string {
  return `${plugin}: ctx.${member}.${method} needs ${grantedBy.join(' or ')}, which is not granted; declare it under capabilities in ${plugin}/plugin.json, then grant it: keel plugin upgrade ${plugin} --grant ${grantedBy[0]}`;
}

/** The refusal of company data to a call that serves no company. */
export function companyScopeDenial(plugin: string, what: string): string {
  return `${plugin}: ${what} reaches company data, and this call serves no company; declare the job perCompany: true in plugin.json to run it once per company, or serve the route under a company (companyParam or agentParam)`;
}

export function checkCapabilityCall(input: {
  plugin: string; grants: readonly string[]; member: string; method: string; args: unknown; companyId: string | null;
  /** The arguments were checked already (a host-internal call made on the plugin's behalf). */
  argumentsChecked?: boolean;
}): { refusal: CallRefusal } | { found: GrantedMethod } {
  const { plugin, grants, member, method, args } = input;
  const found = capabilityMethod(member, method);
  if (!found) return { refusal: { status: 400, code: 'unknown_capability', message: `Unknown capability ${member}.${method}` } };
  if (!found.grantedBy.some((id) => grants.includes(id))) {
    return { refusal: { status: 403, code: 'capability_denied', message: capabilityDenial(plugin, member, method, found.grantedBy) } };
  }
  if (found.spec.scope === 'company' && !input.companyId) {
    return { refusal: { status: 403, code: 'company_scope_required', message: companyScopeDenial(plugin, `ctx.${member}.${method}`) } };
  }
  if (input.argumentsChecked) return { found };
  if (!Array.isArray(args)) return { refusal: { status: 400, code: 'invalid_arguments', message: `ctx.${member}.${method}: arguments must be a JSON array` } };
  const declared = found.spec.args;
  if (args.length > declared.length) return { refusal: { status: 400, code: 'invalid_arguments', message: `ctx.${member}.${method} takes at most ${declared.length} argument${declared.length === 1 ? '' : 's'}` } };
  const validators = validatorsOf(found);
  for (let index = 0; index < declared.length; index++) {
    const value = args[index];
    // An omitted optional argument arrives as null (undefined does not cross as JSON).
    if ((value === undefined || value === null) && index >= found.spec.required) continue;
    if (!validators[index]!(value ?? null)) {
      const issue = validators[index]!.errors?.[0];
      const where = issue?.instancePath ? ` at ${issue.instancePath}` : '';
      return { refusal: { status: 400, code: 'invalid_arguments', message: `ctx.${member}.${method}: argument ${index + 1}${where} ${issue?.message ?? 'is invalid'}` } };
    }
  }
  return { found };
}

function validatorsOf(found: GrantedMethod): ValidateFunction[] {
  const key = `${found.member}.${found.method}`;
  let validators = compiled.get(key);
  if (!validators) {
    validators = found.spec.args.map((schema) => ajv.compile(schema));
    compiled.set(key, validators);
  }
  return validators;
}

/** The arguments of a bridge call: a JSON array, or undefined when they are not one. */
export function parseCallArguments(argsJson: string): unknown[] | undefined {
  try {
    const args = JSON.parse(argsJson) as unknown;
    return Array.isArray(args) ? args : undefined;
  } catch {
    return undefined;
  }
}
