import pg from 'pg';
import { describeEndpoints, parseDatabaseUrl, type DatabaseAddress, type DatabaseEndpoint, type SessionAttrs } from './database-url.ts';

/**
 * The one way Keel opens a PostgreSQL connection: the kernel's pool (database.ts), the LISTEN
 * connections (notification-listener.ts), the job engine's pool, cluster locks, backups and
 * each plugin worker's pool all take their driver settings from `connectionConfig` or a client
 * from `newClient`.
 *
 * A URL with one host and no target_session_attrs is handed to node-postgres as it is. A URL
 * with a host list (or a session kind to check) gets a client class that walks the list, as
 * libpq does: before each new connection it picks the server last found suitable, or probes
 * the hosts in order for one (a read-write server for `target_session_attrs=read-write`), and
 * after connecting it checks the server once more. A connection that fails, or lands on a
 * server of the wrong kind, makes the process forget that server, so the next connection walks
 * the list again: after a failover every pool follows the new primary as its broken
 * connections are replaced, without a restart.
 */

/** How long a probe of one host may take before the walk moves on to the next. */
const PROBE_TIMEOUT_MS = 3_000;
/** How long a connection to the chosen server may take, where the caller set no limit. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * How a pool keeps connections it is not using: one stays open, ready for the next statement,
 * and any other closes after ten seconds without use (node-postgres's default). Each open
 * connection is a PostgreSQL backend process holding 15-37 MiB resident (its catalog caches and
 * the shared buffers it touched: the instance's memory, README.md), so an idle instance keeps
 * one per pool. A shorter timeout (one second was tried) saves nothing at rest but costs under
 * bursty load: a new backend pays its fork, its password exchange and cold catalog, plan and
 * PL/pgSQL caches, and a fleet of 100 agents (a run every 0.6 s) opened 1.6 backends a run and
 * spent 40% more database time per run than with connections kept ten seconds.
 */
export const IDLE_CONNECTIONS: Readonly<{ min: number; idleTimeoutMillis: number }> = { min: 1, idleTimeoutMillis: 10_000 };

/** Driver settings for a client or a pool on `url`; `extra` adds or overrides driver options. */
export function connectionConfig<T extends pg.ClientConfig>(url: string, extra: T = {} as T): T & { connectionString: string; Client?: typeof pg.Client } {
  const address = parseDatabaseUrl(url);
  if (!address.walks) return { ...extra, connectionString: url };
  return { ...extra, connectionString: address.urlFor(address.endpoints[0]!), Client: walkingClientClass(url, address) };
}

/** A client (not yet connected) on `url`, walking its host list when it has one. */
export function newClient(url: string, extra: pg.ClientConfig = {}): pg.Client {
  const { Client = pg.Client, ...config } = connectionConfig(url, extra);
  return new Client(config);
}

/** The error of a connection attempt that found no suitable server: retryable, like a refused connection. */
export class NoSuitableServerError extends Error {
  /** SQLSTATE sqlclient_unable_to_establish_sqlconnection: connection-errors.ts reads it as "unavailable". */
  readonly code = '08001';
}

/** What this process last learnt about a host list: the server that suited, shared by every URL on that list. */
class ServerChoice {
  private known: DatabaseEndpoint | null = null;
  private walking: Promise<DatabaseEndpoint> | null = null;
  private readonly address: DatabaseAddress;

  constructor(address: DatabaseAddress) {
    this.address = address;
  }

  /** The server to connect to: the one that suited last, or the first that suits now (probed with `probe`). */
  choose(probe: (endpoint: DatabaseEndpoint) => Promise<boolean>): Promise<DatabaseEndpoint> {
    if (this.address.endpoints.length === 1) return Promise.resolve(this.address.endpoints[0]!);
    if (this.known) return Promise.resolve(this.known);
    // Connections opened at once share one walk rather than each probing every host.
    this.walking ??= this.walk(probe).finally(() => { this.walking = null; });
    return this.walking;
  }

  /** Forgets `endpoint` after a connection to it failed or found it unsuitable. */
  forget(endpoint: DatabaseEndpoint): void {
    if (this.known === endpoint) this.known = null;
  }

  private async walk(probe: (endpoint: DatabaseEndpoint) => Promise<boolean>): Promise<DatabaseEndpoint> {
    const refusals: string[] = [];
    for (const endpoint of this.address.endpoints) {
      try {
        if (await probe(endpoint)) {
          this.known = endpoint;
          return endpoint;
        }
        refusals.push(`${endpoint.host}:${endpoint.port} is not ${this.address.sessionAttrs}`);
      } catch (error) {
        refusals.push(`${endpoint.host}:${endpoint.port}: ${(error as Error).message}`);
      }
    }
    throw new NoSuitableServerError(`no ${this.address.sessionAttrs} server among ${describeEndpoints(this.address)} (${refusals.join('; ')})`);
  }
}

const choices = new Map<string, ServerChoice>();
const clientClasses = new Map<string, typeof pg.Client>();

function choiceFor(address: DatabaseAddress): ServerChoice {
  const key = `${describeEndpoints(address)}|${address.sessionAttrs}`;
  let choice = choices.get(key);
  if (!choice) choices.set(key, choice = new ServerChoice(address));
  return choice;
}

/** Whether a connected server is of the kind the URL asks for (libpq's target_session_attrs). */
export async function serverSuits(client: pg.Client, attrs: SessionAttrs): Promise<boolean> {
  if (attrs === 'any') return true;
  const { rows } = await client.query<{ recovery: boolean; read_only: string }>("select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') as read_only");
  const { recovery, read_only: readOnly } = rows[0]!;
  // A primary being promoted (pg_auto_failover's stop_replication) is out of recovery but still read-only: not read-write yet.
  if (attrs === 'read-write') return readOnly === 'off';
  if (attrs === 'read-only') return readOnly === 'on';
  if (attrs === 'primary') return !recovery;
  return recovery;
}

type ConnectCallback = (error: Error | undefined) => void;

function walkingClientClass(url: string, address: DatabaseAddress): typeof pg.Client {
  const known = clientClasses.get(url);
  if (known) return known;
  const choice = choiceFor(address);
  class WalkingClient extends pg.Client {
    private readonly settings: pg.ClientConfig;

    constructor(config?: string | pg.ClientConfig) {
      const settings = typeof config === 'string' ? { connectionString: config } : config ?? {};
      // A primary whose machine vanished answers nothing: without these a connection to it would
      // wait out the operating system's TCP timeouts (minutes) instead of moving on. pg-pool makes
      // `password` non-enumerable, so it is copied by name.
      super({ ...settings, password: settings.password, connectionTimeoutMillis: settings.connectionTimeoutMillis || CONNECT_TIMEOUT_MS, keepAlive: settings.keepAlive ?? true });
      this.settings = settings;
    }

    override connect(): Promise<void>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<void> | void {
      const connected = this.connectToChosen();
      if (!callback) return connected;
      connected.then(() => callback(undefined), (error: Error) => callback(error));
    }

    private async connectToChosen(): Promise<void> {
      const endpoint = await choice.choose((candidate) => this.probe(candidate));
      // node-postgres reads the host and port when it connects (and again to cancel a statement).
      this.host = endpoint.host;
      this.port = endpoint.port;
      Object.assign((this as unknown as { connectionParameters: object }).connectionParameters, { host: endpoint.host, port: endpoint.port });
      try {
        await super.connect();
      } catch (error) {
        choice.forget(endpoint);
        throw error;
      }
      if (!(await serverSuits(this, address.sessionAttrs).catch(() => false))) {
        choice.forget(endpoint);
        await this.end().catch(() => undefined);
        throw new NoSuitableServerError(`${endpoint.host}:${endpoint.port} is not ${address.sessionAttrs} (any more)`);
      }
    }

    /** A short-lived connection to `endpoint` with this client's settings, asking what kind of server it is. */
    private async probe(endpoint: DatabaseEndpoint): Promise<boolean> {
      const { Client: _walking, ...settings } = this.settings as pg.ClientConfig & { Client?: unknown };
      const probe = new pg.Client({ ...settings, password: this.settings.password, connectionString: address.urlFor(endpoint), connectionTimeoutMillis: PROBE_TIMEOUT_MS });
      probe.on('error', () => undefined);
      await probe.connect();
      try {
        return await serverSuits(probe, address.sessionAttrs);
      } finally {
        await probe.end().catch(() => undefined);
      }
    }
  }
  clientClasses.set(url, WalkingClient);
  return WalkingClient;
}
