import { isDatabaseUnavailable } from '../db/connection-errors.ts';

/**
 * The parts of a running Keel that the health routes report on. The kernel registers its
 * own (the database, the notification listener); the extension host registers what it
 * brings (the job engine, each plugin's worker), so the kernel's core never has to know
 * the host. Components registered for `readiness` decide whether this process should take
 * traffic (`GET /api/health/ready`, and a 503 from `GET /api/health`); any other component
 * that is `down` (a plugin's worker) leaves the instance `degraded`, still serving.
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
/**
 * A readiness probe's bound: well under a load balancer's usual probe timeout, so that a
 * database that hangs (rather than refusing) still gets an answer, 503, in time.
 */
const READINESS_TIMEOUT_MS = 2_000;

export interface HealthReport {
  /** Every component is up (or degraded). */
  healthy: boolean;
  /** Every readiness component is up: this process can take traffic. */
  ready: boolean;
  components: Record<string, ComponentHealth | Record<string, ComponentHealth>>;
  /** Components that are down, as `name` or `group.member`. */
  failing: string[];
  /** Readiness components that are down. */
  notReady: string[];
}

export class HealthChecks {
  private readonly checks = new Map<string, { check: HealthCheck; grouped: boolean; readiness: boolean }>();
  /** The readiness check in flight: probes that arrive meanwhile share it rather than pile queries on a slow database. */
  private readinessInFlight: Promise<{ ready: boolean; components: Record<string, ComponentHealth>; notReady: string[] }> | null = null;

  /** A single component; `readiness` when this process cannot serve without it (the database, the job engine). */
  register(name: string, check: () => Promise<ComponentHealth>, options: { readiness?: boolean } = {}): void {
    this.checks.set(name, { check, grouped: false, readiness: options.readiness ?? false });
  }

  /** A group of components by name (one per plugin, say). */
  registerGroup(name: string, check: () => Promise<Record<string, ComponentHealth>>): void {
    this.checks.set(name, { check, grouped: true, readiness: false });
  }

  /** Only the readiness components, each bounded by a short timeout; plugins never take part. */
  readiness(): Promise<{ ready: boolean; components: Record<string, ComponentHealth>; notReady: string[] }> {
    this.readinessInFlight ??= (async () => {
      const readiness = [...this.checks].filter(([, { readiness }]) => readiness);
      const entries = await Promise.all(readiness.map(async ([name, { check }]) => [name, await bounded(check, READINESS_TIMEOUT_MS) as ComponentHealth] as const));
      const notReady = entries.filter(([, health]) => health.status === 'down').map(([name]) => name);
      return { ready: notReady.length === 0, components: Object.fromEntries(entries), notReady };
    })().finally(() => { this.readinessInFlight = null; });
    return this.readinessInFlight;
  }

  async report(): Promise<HealthReport> {
    const entries = await Promise.all([...this.checks].map(async ([name, { check, grouped, readiness }]) => [name, grouped, readiness, await bounded(check)] as const));
    const components: Record<string, ComponentHealth | Record<string, ComponentHealth>> = {};
    const failing: string[] = [];
    const notReady: string[] = [];
    for (const [name, grouped, readiness, result] of entries) {
      components[name] = result;
      if (readiness && (result as ComponentHealth).status === 'down') notReady.push(name);
      // A group whose check itself failed reports one state for the whole group.
      if (!grouped || typeof (result as ComponentHealth).status === 'string') {
        if ((result as ComponentHealth).status === 'down') failing.push(name);
        continue;
      }
      for (const [member, health] of Object.entries(result as Record<string, ComponentHealth>)) {
        if (health.status === 'down') failing.push(`${name}.${member}`);
      }
    }
    return { healthy: failing.length === 0, ready: notReady.length === 0, components, failing, notReady };
  }
}

async function bounded(check: HealthCheck, timeoutMs = CHECK_TIMEOUT_MS): Promise<ComponentHealth | Record<string, ComponentHealth>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      check(),
      new Promise<ComponentHealth>((resolve) => { timer = setTimeout(() => resolve({ status: 'down', detail: `no answer within ${timeoutMs} ms` }), timeoutMs); }),
    ]);
  } catch (error) {
    // Never a connection string or an address: the health answer may be public.
    return { status: 'down', detail: isDatabaseUnavailable(error) ? 'cannot reach the database' : 'check failed' };
  } finally {
    clearTimeout(timer);
  }
}
