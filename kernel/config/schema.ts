/**
 * JSON schema of the kernel configuration. Every property carries a description because
 * the same schema documents the configuration file (see README, "Configuration").
 */
export const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['deploymentMode', 'server', 'auth', 'database', 'dataDir', 'logging', 'limits'],
  properties: {
    deploymentMode: {
      enum: ['local_trusted', 'authenticated'],
      description: 'local_trusted: every request is the implicit local board (private exposure only). authenticated: login-aware.',
    },
    server: {
      type: 'object',
      additionalProperties: false,
      required: ['host', 'port', 'exposure'],
      properties: {
        host: { type: 'string', minLength: 1, description: 'Interface the HTTP server binds to.' },
        port: { type: 'integer', minimum: 0, maximum: 65535, description: 'TCP port; 0 picks a free port.' },
        exposure: { enum: ['private', 'public'], description: 'Whether the instance is reachable beyond the operator.' },
        allowedHostnames: {
          type: 'array', maxItems: 100, uniqueItems: true,
          items: { type: 'string', minLength: 1, maxLength: 253, pattern: '^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\\.?$|^\\[[0-9A-Fa-f:.]+\\]$' },
          description: 'Further names (host names or IP addresses, no port; IPv6 in brackets) that requests may carry in Host and Origin, on any port. Always served: localhost, 127.0.0.1 and [::1] and the bound address (each on the listening port; every interface address when bound to 0.0.0.0 or ::), and the host of auth.publicBaseUrl. Env: KEEL_ALLOWED_HOSTNAMES (comma-separated).',
        },
        headersTimeoutMs: {
          type: 'integer', minimum: 100, maximum: 600_000,
          description: 'A connection must deliver complete request headers this soon after it opens (or after its previous request): one that sends nothing, or stalls mid-headers, is answered 408 request_timeout and closed (default 30000). Requests whose headers are in, SSE streams and streamed answers are not affected. Env: KEEL_HEADERS_TIMEOUT_MS.',
        },
        keepAliveTimeoutMs: {
          type: 'integer', minimum: 100, maximum: 600_000,
          description: 'An idle keep-alive connection is closed after this long without a new request (default 65000, above the 60 s idle timeout of common load balancers: keep it above that of yours). Env: KEEL_KEEP_ALIVE_TIMEOUT_MS.',
        },
      },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      required: ['baseUrlMode'],
      properties: {
        baseUrlMode: { enum: ['auto', 'explicit'], description: 'explicit requires publicBaseUrl; required for public exposure.' },
        publicBaseUrl: { type: 'string', format: 'uri', pattern: '^https?://', description: 'Base URL users reach the instance at.' },
        sessionTtlHours: { type: 'integer', minimum: 1, maximum: 8760, description: 'Browser session lifetime.' },
        agentJwtSecret: { type: 'string', minLength: 32, description: 'Secret from which per-company agent JWT signing keys are derived. Generated into the data directory when absent.' },
        agentJwtTtlSeconds: { type: 'integer', minimum: 60, maximum: 86400, description: 'Lifetime of run-scoped agent JWTs.' },
      },
    },
    database: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: { type: 'string', pattern: '^postgres(ql)?://', description: 'External PostgreSQL; when absent an embedded server runs in the data directory.' },
        poolSize: { type: 'integer', minimum: 1, maximum: 100, description: 'Connections per kernel process.' },
      },
    },
    dataDir: { type: 'string', minLength: 1, description: 'Where the embedded database, keys and assets live.' },
    backups: {
      type: 'object',
      additionalProperties: false,
      properties: {
        directory: { type: 'string', minLength: 1, description: 'Where database backups are written (default <dataDir>/backups). Env: KEEL_BACKUP_DIR.' },
        intervalSeconds: { type: 'integer', minimum: 5, maximum: 2_678_400, description: 'Take a scheduled backup this often (absent: no schedule). Several processes on one database take one backup per interval between them. Env: KEEL_BACKUP_INTERVAL_SECONDS.' },
      },
    },
    logging: {
      type: 'object',
      additionalProperties: false,
      required: ['level'],
      properties: {
        level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], description: 'pino log level.' },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      required: ['jsonBodyBytes', 'attachmentBytes'],
      properties: {
        jsonBodyBytes: { type: 'integer', minimum: 1024, description: 'Largest accepted JSON request body.' },
        attachmentBytes: { type: 'integer', minimum: 1024, description: 'Largest accepted upload (logos, attachments); plugin upload routes may declare a smaller maxBytes.' },
        uploadSeconds: { type: 'integer', minimum: 1, maximum: 3600, description: 'Deadline for a whole upload to a plugin route (default 300); a slower upload is refused with 408 upload_timeout.' },
        blobQuota: {
          type: 'object',
          additionalProperties: false,
          description: 'How much a company may keep in the blob store, in total and per plugin; a blob past a quota is refused with 413 blob_quota_exceeded. Deleting blobs gives the room back.',
          properties: {
            companyBlobs: { type: 'integer', minimum: 1, description: 'Blobs a company may hold, all owners together (default 10000).' },
            companyBytes: { type: 'integer', minimum: 1024, description: 'Bytes a company may hold, all owners together (default 4 GiB).' },
            pluginBlobs: { type: 'integer', minimum: 1, description: 'Blobs one plugin may hold in one company (default 2000).' },
            pluginBytes: { type: 'integer', minimum: 1024, description: 'Bytes one plugin may hold in one company (default 1 GiB).' },
          },
        },
      },
    },
    llm: {
      type: 'object',
      additionalProperties: false,
      description: 'The model gateway (requests forwarded to model providers by proxy routes, kernel/gateway/).',
      properties: {
        privateNetworkHosts: {
          type: 'array', maxItems: 200, uniqueItems: true,
          items: { type: 'string', minLength: 1, maxLength: 260, pattern: '^[^@\\s/?#]+$' },
          description: 'Entries "<host>" or "<host>:<port>": model provider hosts a proxy route may forward to although they are private, loopback or link-local (a provider on the LAN or this machine), over http or https. Off by default: otherwise only https to public addresses; cloud metadata addresses stay refused. Env: KEEL_LLM_PRIVATE_NETWORK_HOSTS (comma-separated).',
        },
      },
    },
    plugins: {
      type: 'object',
      additionalProperties: false,
      properties: {
        privateNetworkHosts: {
          type: 'array', maxItems: 200,
          items: { type: 'string', pattern: '^[a-z][a-z0-9]*([-_.][a-z0-9]+)*@[^@\\s/]+$' },
          description: 'Entries "<pluginKey>@<host>": lets ctx.http.fetch of that plugin reach private, loopback or link-local addresses of that host, when the plugin names the host exactly (no wildcard) in network.allow. Off by default; cloud metadata addresses stay refused. Env: KEEL_PLUGIN_PRIVATE_NETWORK_HOSTS (comma-separated).',
        },
        networkHosts: {
          type: 'array', maxItems: 200,
          items: { type: 'string', pattern: '^[a-z][a-z0-9]*([-_.][a-z0-9]+)*@[^@\\s/]+$' },
          description: 'Entries "<pluginKey>@<host>[:<port>]": adds the host to that plugin\'s network allow-list, as if its manifest named it (for a destination the operator chooses, such as the feedback-sharing endpoint of the work plugin). Every other check of ctx.http.fetch applies. Default: no entries. Env: KEEL_PLUGIN_NETWORK_HOSTS (comma-separated).',
        },
        sharedWorker: {
          type: 'object', additionalProperties: false,
          description: 'Which plugins share the shared extension-host worker processes, and how many there are (kernel/host/worker-sharing.ts). Each plugin runs in one of them and keeps its own isolate, database role and deadlines; a fatal error restarts that process with every plugin in it, and none in the others.',
          properties: {
            firstParty: { type: 'boolean', description: 'First-party plugins share the shared worker processes (default true); false gives each a process of its own. Env: KEEL_PLUGIN_SHARED_WORKER=off.' },
            processes: { type: 'integer', minimum: 1, maximum: 64, description: 'How many shared worker processes the shared plugins are spread over, each plugin in one of them (default: one per core of the machine, os.availableParallelism()). Env: KEEL_PLUGIN_SHARED_WORKERS.' },
            plugins: {
              type: 'array', maxItems: 200, items: { type: 'string', pattern: '^[a-z][a-z0-9]*(-[a-z0-9]+)*$', maxLength: 48 },
              description: 'Keys of other plugins the operator puts in the shared worker processes too (default none: each has its own).',
            },
          },
        },
        localImport: {
          type: 'object', additionalProperties: false,
          description: 'Server paths plugins granted local.import may read (skill imports from a local path). The data directory itself is never readable, except <dataDir>/skills.',
          properties: {
            roots: {
              type: 'array', maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 4096, pattern: '^/' },
              description: 'Absolute directories below which imports may read. Default in local_trusted mode: the instance temporary directory and <dataDir>/skills; otherwise none.',
            },
            allowAgents: { type: 'boolean', description: 'Let agent callers import from local paths too (default false: board users only).' },
          },
        },
        events: {
          type: 'object', additionalProperties: false,
          description: 'Delivery of durable events to plugin subscribers (kernel/host/contributions/events.ts).',
          properties: {
            maxAttempts: { type: 'integer', minimum: 1, maximum: 100, description: 'Failed deliveries of one event to one subscriber before it becomes a dead letter (default 8).' },
            firstRetryMs: { type: 'integer', minimum: 10, maximum: 3_600_000, description: 'Wait before the first retry; doubles with each failure (default 1000).' },
            maxRetryMs: { type: 'integer', minimum: 10, maximum: 86_400_000, description: 'Longest wait between retries (default 300000).' },
          },
        },
      },
    },
  },
} as const;

export type DeploymentMode = 'local_trusted' | 'authenticated';

export interface KeelConfig {
  deploymentMode: DeploymentMode;
  server: { host: string; port: number; exposure: 'private' | 'public'; allowedHostnames?: string[]; headersTimeoutMs?: number; keepAliveTimeoutMs?: number };
  auth: {
    baseUrlMode: 'auto' | 'explicit';
    publicBaseUrl?: string;
    sessionTtlHours?: number;
    agentJwtSecret?: string;
    agentJwtTtlSeconds?: number;
  };
  database: { url?: string; poolSize?: number };
  dataDir: string;
  backups?: { directory?: string; intervalSeconds?: number };
  logging: { level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent' };
  limits: { jsonBodyBytes: number; attachmentBytes: number; uploadSeconds?: number; blobQuota?: { companyBlobs?: number; companyBytes?: number; pluginBlobs?: number; pluginBytes?: number } };
  llm?: { privateNetworkHosts?: string[] };
  plugins?: { privateNetworkHosts?: string[]; networkHosts?: string[]; localImport?: { roots?: string[]; allowAgents?: boolean }; sharedWorker?: { firstParty?: boolean; processes?: number; plugins?: string[] }; events?: { maxAttempts?: number; firstRetryMs?: number; maxRetryMs?: number } };
}
