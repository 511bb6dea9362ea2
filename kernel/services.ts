import type { Logger } from 'pino';
import type { ActivityLog } from './activity/activity-log.ts';
import type { AgentJwt } from './auth/agent-jwt.ts';
import type { AuthCache, Invalidation } from './auth/auth-cache.ts';
import type { ActorResolver } from './auth/resolve-actor.ts';
import type { KeelConfig } from './config/schema.ts';
import type { LastUsedRecorder } from './auth/last-used.ts';
import type { Database, Tx } from './db/database.ts';
import type { EventBus } from './events/event-bus.ts';
import type { KernelPoints } from './points/kernel-points.ts';
import type { PortabilityParts } from './portability/parts.ts';
import type { RunLedger } from './runs/run-ledger.ts';
import type { Executor } from './executions/executor.ts';
import type { ModelGateway } from './gateway/model-gateway.ts';
import type { Keyring } from './vault/keyring.ts';
import type { Vault } from './vault/vault.ts';
import type { HealthChecks } from './http/health.ts';
import type { ResourceDirectory } from './tenancy/resource-resolvers.ts';

/**
 * What kernel route modules and services are handed. Built once by kernel/kernel.ts; nothing
 * here is reachable from plugin code, which gets only its brokered `ctx`.
 */
export interface KernelServices {
  config: KeelConfig;
  log: Logger;
  db: Database;
  authCache: AuthCache;
  resolver: ActorResolver;
  jwt: AgentJwt;
  activity: ActivityLog;
  /** Whether a project or agent a route names exists in a company, wherever it lives (a plugin's table for projects). */
  resources: ResourceDirectory;
  events: EventBus;
  /** Questions the kernel asks plugins before a change, answered by the ones that declare them (kernelPoints). */
  points: KernelPoints;
  /** The plugins' parts of company packages (export and import), registered by the extension host. */
  portability: PortabilityParts;
  lastUsed: LastUsedRecorder;
  keyring: Keyring;
  vault: Vault;
  runs: RunLedger;
  /** Agent processes and HTTP exchanges, supervised outside the isolates (ctx.executions). */
  executions: Executor;
  /** Proxy answers: requests forwarded to model providers, streamed, metered and recorded (kernel/gateway/). */
  gateway: ModelGateway;
  /** What GET /api/health reports; parts of the kernel and the host register their checks. */
  health: HealthChecks;
  /** Evicts cached credentials in this process after commit and in every other process via NOTIFY. */
  invalidate(tx: Tx, invalidation: Invalidation): Promise<void>;
}
