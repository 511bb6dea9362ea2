import type { KeelConfig } from '../config/schema.ts';
import { KeelError } from '../http/errors.ts';
import { ALLOW_SETTING, type ServedHosts } from '../http/served-hosts.ts';
import { privateNetworkHostsFor } from '../host/network-settings.ts';
import { normaliseHost } from '../net/allow-list.ts';
import { systemResolver, type Resolver } from '../net/resolver.ts';
import type { ResolvedAddress } from '../net/http-exchange.ts';
import { checkHttpTarget } from './http-runner.ts';

/**
 * The addresses of an agent's configuration, checked by one function at write (the kernel point
 * `agent.adapter-config` names them: `addressFields`, `instanceAddressFields`) and at connection
 * (the executor, before an execution starts):
 * - an address Keel connects to passes the executor's address rules (checkHttpTarget: metadata
 *   never, private and loopback only where an operator opened them to the plugin), whatever
 *   flag the configuration sets;
 * - an address of this instance the remote side is handed (to call Keel back with the run's
 *   token) must be an origin this instance serves, never a foreign one.
 */

/** The address Keel will connect to, as the executor checks it; answers the checked addresses. */
export async function checkConnectAddress(url: URL, config: KeelConfig, plugin: string, resolve: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  return checkHttpTarget(url, privateNetworkHostsFor(config, plugin), resolve);
}

/**
 * At write: every address field the contributing plugin named, checked as at connection. A
 * refusal is 422 `invalid_adapter_config` naming the field (and the rule, `details.reason`). A
 * name that does not resolve now is accepted: it is resolved and checked again at each start.
 */
export async function checkConfiguredAddresses(adapterConfig: Record<string, unknown>, fields: { connect: string[]; instance: string[] },
  config: KeelConfig, plugin: string, served: ServedHosts | null, resolve: Resolver = systemResolver): Promise<void> {
  for (const field of fields.connect) {
    const value = adapterConfig[field];
    if (value === undefined || value === null) continue;
    const url = parseUrl(value, field);
    try { await checkConnectAddress(url, config, plugin, resolve); } catch (error) {
      if (error instanceof KeelError && error.code === 'address_unresolvable') continue;
      throw asFieldError(error, field);
    }
  }
  for (const field of fields.instance) {
    const value = adapterConfig[field];
    if (value === undefined || value === null) continue;
    try { assertInstanceAddress(value, served, field); } catch (error) { throw asFieldError(error, field); }
  }
}

/**
 * The address handed to a remote side as this instance's: refused (403 `instance_address_denied`)
 * unless this instance serves its origin (http/served-hosts.ts: the names every request must
 * name, so that one list decides what is Keel). Without the list (no server listens) nothing is.
 */
export function assertInstanceAddress(value: unknown, served: ServedHosts | null, field: string): URL {
  const url = parseUrl(value, field);
  if (!served?.servesOrigin(url.origin)) {
    throw new KeelError(403, 'instance_address_denied',
      `adapterConfig.${field} must be an address of this Keel instance (its public base URL, a name in ${ALLOW_SETTING}, or the address it listens on), not ${url.origin}`,
      { details: { path: `adapterConfig.${field}` } });
  }
  return url;
}

function parseUrl(value: unknown, field: string): URL {
  let url: URL | null = null;
  try { url = typeof value === 'string' ? new URL(value) : null; } catch { /* refused below */ }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || !normaliseHost(url.hostname)) {
    throw new KeelError(422, 'invalid_adapter_config', `adapterConfig.${field} must be an absolute http or https URL without credentials`, { details: { path: `adapterConfig.${field}` } });
  }
  return url;
}

function asFieldError(error: unknown, field: string): unknown {
  if (!(error instanceof KeelError) || error.code === 'invalid_adapter_config') return error;
  const path = `adapterConfig.${field}`;
  return new KeelError(422, 'invalid_adapter_config', `${path}: ${error.message}`, { details: { path, reason: error.code } });
}
