import { isDatabaseUnavailable } from '../db/connection-errors.ts';

/**
 * The parts of a running Keel that `GET /api/health` reports on. The kernel registers its
 * own (the database, the notification listener); the extension host registers what it
 * brings (the job engine, each plugin's worker), so the kernel's core never has to know
 * the host. A component that is `down` makes the answer 503; `degraded` is reported but
 * still serves.
 */
export type ComponentStatus = 'up' | 'degraded' | 'down';

export interface ComponentHealth {
  status: ComponentStatus;
  /** What is wrong, in words an operator can act on (never a secret or a connection string). */
  detail?: string;
  [more: string]: unknown;
}

export type HealthCheck = () => Promise<ComponentHealth | Record<string, ComponentHealth>>;

const CHECK_TIMEOUT_MS = 3_000;

export class HealthChecks {
  private readonly checks = new Map<string, { check: HealthCheck; grouped: boolean }>();

  /** A single component. */
  register(name: string, check: () => Promise<ComponentHealth>): void {
    this.checks.set(name, { check, grouped: false });
  }

  /** A group of components by name (one per plugin, say). */
  registerGroup(name: string, check: () => Promise<Record<string, ComponentHealth>>): void {
    this.checks.set(name, { check, grouped: true });
  }

  async report(): Promise<{ healthy: boolean; components: Record<string, ComponentHealth | Record<string, ComponentHealth>>; failing: string[] }> {
    const entries = await Promise.all([...this.checks].map(async ([name, { check, grouped }]) => [name, grouped, await bounded(check)] as const));
    const components: Record<string, ComponentHealth | Record<string, ComponentHealth>> = {};
    const failing: string[] = [];
    for (const [name, grouped, result] of entries) {
      components[name] = result;
      // A group whose check itself failed reports one state for the whole group.
      if (!grouped || typeof (result as ComponentHealth).status === 'string') {
        if ((result as ComponentHealth).status === 'down') failing.push(name);
        continue;
      }
      for (const [member, health] of Object.entries(result as Record<string, ComponentHealth>)) {
        if (health.status === 'down') failing.push(`${name}.${member}`);
      }
    }
    return { healthy: failing.length === 0, components, failing };
  }
}

async function bounded(check: HealthCheck): Promise<ComponentHealth | Record<string, ComponentHealth>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check(),
      new Promise<ComponentHealth>((resolve) => { timer = setTimeout(() => resolve({ status: 'down', detail: `no answer within ${CHECK_TIMEOUT_MS} ms` }), CHECK_TIMEOUT_MS); }),
    ]);
  } catch (error) {
    // Never a connection string or an address: the health answer may be public.
    return { status: 'down', detail: isDatabaseUnavailable(error) ? 'cannot reach the database' : 'check failed' };
  } finally {
    clearTimeout(timer);
  }
}
