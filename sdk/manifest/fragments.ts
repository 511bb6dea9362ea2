import { KERNEL_POINT_NAMES } from './kernel-points.ts';
import { KERNEL_EVENTS } from '../events/kernel-events.ts';
import type { KernelEventName } from '../events/index.ts';

/**
 * The manifest schema, one fragment per contribution point. Every property has a
 * description: the same schema is published for plugin authors and drives validation.
 */
import { identifier, notPrototypeMember, schemaObject } from './fragment-parts.ts';
import { routesFragment } from './routes-fragment.ts';


export { routesFragment };

/**
 * Where the schema asks for a capability id. The registry's ids are not imported here: the
 * capability declarations read manifests (requiredBy), so a manifest schema built from them
 * would tie the manifest's type and every declaration into one circle. The manifest's type sees
 * a string; manifest-schema.ts enumerates the registry's ids at each of these places, and that
 * is the schema manifests are checked against and GET /api/plugins/manifest-schema serves: a
 * manifest naming another id is refused.
 */
export const CAPABILITY_ID = { type: 'string', description: 'Capability id (domain.verb); the registry in sdk/capabilities/ declares each.' } as const;

export const capabilitiesFragment = {
  type: 'array', maxItems: 64, uniqueItems: true,
  description: 'Capabilities the plugin asks for; the operator grants them on enable. No wildcards.',
  items: {
    type: 'object', additionalProperties: false, required: ['id', 'reason'],
    properties: {
      id: CAPABILITY_ID,
      reason: { type: 'string', minLength: 3, maxLength: 500, description: 'Why the plugin needs it; shown to the operator.' },
    },
  },
} as const;

export const toolsFragment = {
  type: 'array', maxItems: 100, description: 'Tools agents can call through POST /api/plugins/tools/execute.',
  items: {
    type: 'object', additionalProperties: false, required: ['key', 'description', 'inputSchema'],
    properties: {
      key: { ...identifier, description: 'Tool key; exposed as <pluginKey>.<key>.' },
      description: { type: 'string', minLength: 1, maxLength: 2000, description: 'What the tool does, for the agent.' },
      inputSchema: { ...schemaObject, description: 'Schema of the tool input.' },
      readOnly: { type: 'boolean', description: 'The tool changes nothing: each statement runs alone and read-only (no transaction for the whole call) and no activity entry is written; MCP clients see readOnlyHint.' },
    },
  },
} as const;

export const jobsFragment = {
  type: 'array', maxItems: 50, description: 'Jobs: scheduled (cron), triggered by an operator, or enqueued at run time (ctx.jobs.enqueue); leased through the database.',
  items: {
    type: 'object', additionalProperties: false, required: ['key'],
    properties: {
      key: { ...identifier, description: 'Handler key in definePlugin({ jobs }).' },
      schedule: { type: 'string', maxLength: 100, pattern: '^\\s*\\S+(\\s+\\S+){4}\\s*$', description: 'Cron expression (5 fields, UTC); absent = manual only.' },
      description: { type: 'string', maxLength: 1000, description: 'Shown to operators.' },
      perCompany: { type: 'boolean', description: 'Run once per company (every company not archived), each call serving that company alone; without it the job serves no company and reaches no company data.' },
      timeoutMs: { type: 'integer', minimum: 10, maximum: 900000, description: 'Wall-clock deadline of one run of this job (at most 15 minutes); defaults to limits.callTimeoutMs.' },
      concurrency: { type: 'integer', minimum: 1, maximum: 16, description: 'Enqueued runs of this job at once, across every Keel process (default 1).' },
      retryLimit: { type: 'integer', minimum: 0, maximum: 10, description: 'Retries of a failed enqueued run, with exponential backoff (default 2).' },
      payloadSchema: { ...schemaObject, description: 'Schema of the payload of ctx.jobs.enqueue; checked when it is enqueued and again before it runs.' },
    },
  },
} as const;

export const webhooksFragment = {
  type: 'array', maxItems: 50, description: 'Inbound webhook endpoints at /api/plugins/{pluginKey}/webhooks/{key}.',
  items: {
    type: 'object', additionalProperties: false, required: ['key'],
    properties: {
      key: { ...identifier, description: 'Endpoint key.' },
      description: { type: 'string', maxLength: 1000, description: 'Shown to operators.' },
      signature: {
        type: 'object', additionalProperties: false, required: ['scheme', 'header', 'secretConfigKey'],
        description: 'Signature verification done by the host before the body is parsed.',
        properties: {
          scheme: { enum: ['hmac-sha256'], description: 'Signature scheme.' },
          header: { type: 'string', minLength: 1, maxLength: 100, description: 'Header carrying the hex signature.' },
          secretConfigKey: { type: 'string', minLength: 1, maxLength: 100, description: 'Config key holding the shared secret.' },
          timestampHeader: { type: 'string', maxLength: 100, description: 'Header with a Unix timestamp, signed with the body; enables replay protection.' },
          toleranceSeconds: { type: 'integer', minimum: 1, maximum: 3600, description: 'Accepted clock skew for the timestamp.' },
        },
      },
    },
  },
} as const;

/** The kernel's events, named by their declarations (sdk/events/kernel-events.ts). */
export const KERNEL_EVENT_NAMES: ReadonlyArray<KernelEventName> = KERNEL_EVENTS.map((event) => event.name);

/** `<pluginKey>.<name>`: a plugin's own event (the key's grammar, then dot-separated segments). */
const pluginEventName = { type: 'string', pattern: '^[a-z][a-z0-9]*(-[a-z0-9]+)*(\\.[a-z][a-z0-9_]*)+$', maxLength: 128 } as const;

/** A JSON value a filter compares a payload member with: filters compare scalars only. */
const filterScalar = { anyOf: [{ type: 'string', maxLength: 200 }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }] } as const;

/**
 * after_commit subscriptions only: the event is delivered to this subscriber only when every
 * condition holds of its payload's top-level member of that name (the kernel evaluates it when
 * the event is appended, so an event the handler would ignore costs no call). `in`: the member
 * is one of the values; `nonEmpty: true`: the member is a non-empty array, object or string.
 */
const deliveryFilter = {
  type: 'object', minProperties: 1, maxProperties: 4,
  propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 64 },
  additionalProperties: {
    anyOf: [
      { type: 'object', additionalProperties: false, required: ['in'], properties: { in: { type: 'array', minItems: 1, maxItems: 20, items: filterScalar } } },
      { type: 'object', additionalProperties: false, required: ['nonEmpty'], properties: { nonEmpty: { const: true } } },
    ],
  },
  description: 'after_commit only: deliver the event only when each named top-level payload member is one of `in`, or is non-empty (`nonEmpty: true`): an event the subscriber would ignore costs it no call.',
} as const;

export const eventsFragment = {
  type: 'array', maxItems: 50, description: 'Events the plugin receives: kernel events, or events other plugins publish (<pluginKey>.<name>).',
  items: {
    type: 'object', additionalProperties: false, required: ['event', 'mode'],
    properties: {
      event: { anyOf: [{ enum: KERNEL_EVENT_NAMES }, pluginEventName], description: 'Event name: a kernel event, or <pluginKey>.<name> of a plugin\'s published event.' },
      mode: { enum: ['after_commit', 'in_transaction'], description: 'after_commit: durable subscriber, at least once, in order per entity (events.subscribe); in_transaction: read-only validator that can veto a kernel change (events.hooks).' },
      awaited: { type: 'boolean', description: 'after_commit on a kernel event only: an API request whose own change emitted the event answers once this subscriber handled it (bounded by its call deadline), so what the plugin derives from the change is readable at once.' },
      where: deliveryFilter,
    },
  },
} as const;

export const publishedEventsFragment = {
  type: 'array', maxItems: 50, description: 'Events the plugin publishes with ctx.events.publish (needs events.publish).',
  items: {
    type: 'object', additionalProperties: false, required: ['name', 'schema'],
    properties: {
      name: { ...pluginEventName, description: 'Event name; must start with the plugin key and a dot (<pluginKey>.<name>).' },
      description: { type: 'string', maxLength: 500, description: 'What the event means, for subscribers.' },
      schema: { ...schemaObject, description: 'Schema every published payload must match.' },
    },
  },
} as const;

export const uiFragment = {
  type: 'object', additionalProperties: false, description: 'UI contributions, shown while the plugin is enabled.',
  properties: {
    slots: {
      type: 'array', maxItems: 50, description: 'Named UI slots the plugin fills.',
      items: {
        type: 'object', additionalProperties: false, required: ['slot', 'key'],
        properties: {
          slot: { type: 'string', minLength: 1, maxLength: 100, description: 'Slot name, e.g. wiki-sidebar.' },
          key: { ...identifier, description: 'Contribution key.' },
          label: { type: 'string', maxLength: 200, description: 'Display label.' },
          order: { type: 'integer', minimum: 0, maximum: 10000, description: 'Sort order within the slot.' },
          dataKey: { ...identifier, description: 'Data handler that feeds the slot.' },
        },
      },
    },
    launchers: {
      type: 'array', maxItems: 50, description: 'Buttons or menu entries.',
      items: {
        type: 'object', additionalProperties: false, required: ['key', 'label', 'placement'],
        properties: {
          key: { ...identifier, description: 'Launcher key.' },
          label: { type: 'string', minLength: 1, maxLength: 200, description: 'Display label.' },
          placement: { type: 'string', minLength: 1, maxLength: 100, description: 'Where it appears.' },
          action: { ...identifier, description: 'Action handler it triggers.' },
        },
      },
    },
    pages: {
      type: 'array', maxItems: 20, description: 'Pages (needs ui.page.register).',
      items: {
        type: 'object', additionalProperties: false, required: ['key', 'title', 'path'],
        properties: {
          key: { ...identifier, description: 'Page key.' },
          title: { type: 'string', minLength: 1, maxLength: 200, description: 'Page title.' },
          path: { type: 'string', pattern: '^/[A-Za-z0-9_\\-/]*$', maxLength: 200, description: 'Page path in the UI.' },
        },
      },
    },
  },
} as const;

export const foldersFragment = {
  type: 'array', maxItems: 10, description: 'Local-folder mounts (needs local.folders); operators set the path per company.',
  items: {
    type: 'object', additionalProperties: false, required: ['key', 'access'],
    properties: {
      key: { ...identifier, description: 'Mount key.' },
      access: { enum: ['read', 'readWrite'], description: 'What the plugin may do inside the mount.' },
      description: { type: 'string', maxLength: 1000, description: 'Shown to operators.' },
      onChange: {
        type: 'object', additionalProperties: false, required: ['job'],
        description: "Watch the mount: when files change on disk (an editor, a sync tool), the host runs this job in the mount's company with payload {folderKey, changes: [{path, kind: 'add'|'change'|'unlink'}]}, changes batched.",
        properties: { job: { ...identifier, description: 'Key of a job declared under jobs (no schedule needed).' } },
      },
    },
  },
} as const;

export const servicesFragment = {
  type: 'object', additionalProperties: false, description: 'Services offered to and used from other plugins, brokered by the host.',
  properties: {
    provides: {
      type: 'array', maxItems: 50, description: 'Services this plugin offers (needs services.provide).',
      items: {
        type: 'object', additionalProperties: false, required: ['key'],
        properties: {
          key: { ...identifier, description: 'Service key.' },
          description: { type: 'string', maxLength: 1000, description: 'What it does.' },
          inputSchema: { ...schemaObject, description: 'Schema of the input; the host refuses a call whose input does not match (400 validation_failed).' },
          outputSchema: { ...schemaObject, description: 'Schema of the result; a result that does not match reaches the caller as 502 service_output_invalid.' },
          callerRequires: { type: 'array', items: CAPABILITY_ID, maxItems: 10, description: 'Capabilities a caller must itself hold.' },
          readOnly: { type: 'boolean', description: 'The service changes nothing: it runs read-only, without a transaction of its own (cheaper for a service asked on every request).' },
          contractOf: {
            ...identifier,
            description: 'The key of a plugin that defines this service as a contract (the agent runtime\'s adapter-run, say): that plugin may call it without naming this plugin in its manifest (its services.consumes {contract}); nobody else gains anything.',
          },
        },
      },
    },
    consumes: {
      type: 'array', maxItems: 50,
      description: 'Services of other plugins this one calls (needs services.consume): {plugin, service} names one provider; {contract} calls the service of that key on any provider declaring contractOf this plugin.',
      items: {
        type: 'object', additionalProperties: false,
        oneOf: [{ required: ['plugin', 'service'], not: { required: ['contract'] } }, { required: ['contract'], not: { anyOf: [{ required: ['plugin'] }, { required: ['service'] }] } }],
        properties: {
          plugin: { ...identifier, description: 'Provider plugin key.' },
          service: { ...identifier, description: 'Service key.' },
          contract: { ...identifier, description: 'A service key this plugin defines as a contract: callable on every provider whose service of that key declares contractOf this plugin.' },
        },
      },
    },
  },
} as const;

export const kernelPointsFragment = {
  type: 'array', maxItems: 10, description: 'Kernel points this plugin answers with one of its services (needs kernel.points and services.provide): the kernel consults them before a change.',
  items: {
    type: 'object', additionalProperties: false, required: ['point', 'service'],
    properties: {
      point: { enum: KERNEL_POINT_NAMES, description: 'The kernel point (sdk/manifest/kernel-points.ts).' },
      service: { ...identifier, description: 'Key of a service under services.provides that answers it.' },
      adapterTypes: {
        type: 'array', minItems: 1, maxItems: 20, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_.:-]{0,99}$' },
        description: 'For a point about an agent (its input has adapterType): the adapter types this plugin contributes; it is asked only about agents of these types.',
      },
    },
  },
} as const;

export const portabilityFragment = {
  type: 'object', additionalProperties: false, required: ['exportService', 'importService'],
  description: "This plugin's part of a company package (needs company.portability and services.provide): the kernel calls exportService for the part and importService to preview or apply it.",
  properties: {
    exportService: { ...identifier, description: 'Key of a service under services.provides that answers the part: {data, files}.' },
    importService: { ...identifier, description: 'Key of a service under services.provides that previews or applies the part.' },
    after: { type: 'array', maxItems: 20, items: { type: 'string', pattern: '^[a-z][a-z0-9]*(-[a-z0-9]+)*$', maxLength: 48 }, description: 'Plugin keys whose parts are imported before this one (their id maps reach it).' },
  },
} as const;

export const managedFragment = {
  type: 'object', additionalProperties: false,
  description: 'Resources the host makes and keeps for each company while the plugin is enabled (needs agents.managed for agents). Agents are made on enable and for every new company, or only when the plugin asks (provision on_demand); paused on disable; left in place on uninstall.',
  properties: {
    agents: {
      type: 'array', maxItems: 10, description: 'Managed agents (needs agents.managed): one per company and key, marked managedBy {plugin, key}; made paused (managed) with no adapter configuration, until the board configures and resumes it or approves it.',
      items: {
        type: 'object', additionalProperties: false, required: ['key', 'name'],
        properties: {
          key: { ...identifier, description: 'The agent key: the plugin finds its agent by it (ctx.agents.getManaged).' },
          name: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S', description: 'Display name; a company agent of that name keeps it and the managed one gets a numbered name.' },
          role: { type: 'string', minLength: 1, maxLength: 64, pattern: '\\S', description: 'Agent role (default general).' },
          title: { type: 'string', maxLength: 200, description: 'Agent title.' },
          capabilities: { type: 'string', maxLength: 2000, description: 'What the agent does, shown to other agents.' },
          adapterType: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_.:-]{0,99}$', description: 'Adapter type (default process); its configuration is the board\'s.' },
          provision: { enum: ['on_enable', 'on_demand'], description: 'on_enable (default): the host makes it in every company on enable and at company creation. on_demand: only when the plugin asks, for the company of that call (ctx.agents.provisionManaged), so companies that never use the feature get no agent.' },
        },
      },
    },
    projects: {
      type: 'array', maxItems: 10, description: "Managed projects (needs projects.managed): the plugin asks the work plugin's managed-project service for each, by key, in each company.",
      items: {
        type: 'object', additionalProperties: false, required: ['key', 'name'],
        properties: {
          key: { ...identifier, description: 'The project key, passed to the managed-project service.' },
          name: { type: 'string', minLength: 1, maxLength: 200, description: 'Name it is made with (the board may rename it).' },
          description: { type: 'string', maxLength: 10000, description: 'Description it is made with.' },
        },
      },
    },
    skills: {
      type: 'array', maxItems: 20, description: "Managed skills (needs skills.managed): the plugin installs each from the SKILL.md it ships through the skills plugin's managed-skill service, keyed plugin/<pluginKey>/<slug>.",
      items: {
        type: 'object', additionalProperties: false, required: ['slug', 'name'],
        properties: {
          slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 128, description: 'The skill slug.' },
          name: { type: 'string', minLength: 1, maxLength: 200, description: 'Skill name.' },
          description: { type: 'string', maxLength: 2000, description: 'What the skill is for.' },
        },
      },
    },
    routines: {
      type: 'array', maxItems: 20, description: "Managed routines (needs routines.managed): made paused through the runtime plugin's managed-routine service; while the board has one active it wakes the plugin's managed agent every intervalSec.",
      items: {
        type: 'object', additionalProperties: false, required: ['key', 'agentKey', 'title', 'intervalSec'],
        properties: {
          key: { ...identifier, description: 'The routine key.' },
          agentKey: { ...identifier, description: 'Key of the managed agent (managed.agents) it wakes.' },
          title: { type: 'string', minLength: 1, maxLength: 200, description: 'What it does.' },
          intervalSec: { type: 'integer', minimum: 60, maximum: 2592000, description: 'Seconds between wakes.' },
        },
      },
    },
  },
} as const;

export const manifestSchema = {
  $id: 'https://keel.local/schemas/plugin-manifest.json',
  type: 'object',
  additionalProperties: false,
  required: ['key', 'version', 'sdkApiVersion', 'displayName', 'entry', 'capabilities'],
  properties: {
    $schema: { type: 'string', description: 'Optional schema reference for editors.' },
    key: { type: 'string', pattern: '^[a-z][a-z0-9]*(-[a-z0-9]+)*$', minLength: 2, maxLength: 48, description: 'Plugin key (kebab-case); also its id in the API.' },
    version: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+(-[0-9A-Za-z.-]+)?$', description: 'Semantic version.' },
    sdkApiVersion: { const: 1, description: 'Version of the SDK contract the plugin was built against.' },
    displayName: { type: 'string', minLength: 1, maxLength: 100, description: 'Human-friendly name.' },
    description: { type: 'string', maxLength: 2000, description: 'What the plugin does.' },
    entry: { type: 'string', pattern: '^[A-Za-z0-9_\\-./]+\\.(ts|js|mjs)$', description: 'Entry module, relative to the plugin folder.' },
    tag: { enum: ['first-party', 'example'], description: 'Origin of the plugin.' },
    experimental: { type: 'boolean', description: 'Shown as experimental.' },
    requiresExperimentalSettings: {
      type: 'array', maxItems: 10, uniqueItems: true, items: { type: 'string', pattern: '^[a-z][A-Za-z0-9]{1,63}$' },
      description: "Experimental instance settings the plugin's routes need on (their keys in /api/instance/settings/experimental); the console offers a switch for each that is off.",
    },
    distribution: { enum: ['bundled', 'package'], description: 'bundled (default): a plugin of the checkout\'s plugins/ folder is installed and enabled at start. package: it ships in the checkout as a package that an operator installs by its package name (package.json name), never at start.' },
    capabilities: capabilitiesFragment,
    database: {
      type: 'object', additionalProperties: false, required: ['namespace'], description: 'The plugin\'s own PostgreSQL schema.',
      properties: {
        namespace: { type: 'string', pattern: '^[a-z][a-z0-9_]{1,30}$', description: 'Namespace slug; the schema is plugin_<namespace>.' },
        migrations: { type: 'string', pattern: '^[A-Za-z0-9_\\-./]+$', description: 'Folder of NNNN-name.sql migrations, relative to the plugin folder.' },
        functions: { type: 'boolean', description: 'The migrations create functions or procedures, run DO blocks or comment on objects. Function sources and comments are readable by every role of the database, other plugins included; without this, such migrations are refused.' },
        entities: {
          type: 'array', maxItems: 50, description: "Tables whose rows routes name by id (entityParam): the host reads a row's company before the isolate runs; rows of a hiddenColumn are left out of the company activity feed.",
          items: {
            type: 'object', additionalProperties: false, required: ['type', 'table'],
            properties: {
              type: { type: 'string', pattern: '^[a-z][a-z0-9_]*$', maxLength: 64, ...notPrototypeMember, description: 'Entity name, used by entityParam and in the 404 text.' },
              table: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$', description: "Table of the plugin's schema; its primary key is a uuid column id." },
              companyColumn: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$', description: "Column holding the row's company id (default company_id)." },
              aliasColumn: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$', description: 'Unique text column a path may give instead of the id.' },
              aliasUpperCase: { type: 'boolean', description: 'Upper-case the path value before matching the alias column.' },
              hiddenColumn: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,62}$', description: 'Column set on hidden rows: the company activity feed leaves out entries about them.' },
            },
          },
        },
      },
    },
    routes: routesFragment,
    tools: toolsFragment,
    jobs: jobsFragment,
    webhooks: webhooksFragment,
    events: eventsFragment,
    publishedEvents: publishedEventsFragment,
    ui: uiFragment,
    config: {
      type: 'object', additionalProperties: false, required: ['schema'], description: 'Instance configuration of the plugin.',
      properties: { schema: { ...schemaObject, description: 'Schema of the configuration object.' } },
    },
    folders: foldersFragment,
    network: {
      type: 'object', additionalProperties: false, required: ['allow'], description: 'Hosts ctx.http.fetch may reach.',
      properties: { allow: { type: 'array', maxItems: 50, items: { type: 'string', pattern: '^(\\*\\.)?[a-z0-9.-]+(:[0-9]{1,5})?$' }, description: 'Host names (optionally *.domain and :port). No IP ranges.' } },
    },
    services: servicesFragment,
    kernelPoints: kernelPointsFragment,
    portability: portabilityFragment,
    managed: managedFragment,
    limits: {
      type: 'object', additionalProperties: false, description: 'Sandbox limits (the host clamps them).',
      properties: {
        memoryMb: { type: 'integer', minimum: 8, maximum: 512, description: 'Isolate heap limit.' },
        callTimeoutMs: { type: 'integer', minimum: 10, maximum: 120000, description: 'Wall-clock limit of one call.' },
        maxConcurrentCalls: { type: 'integer', minimum: 1, maximum: 256, description: 'Calls in flight at once.' },
      },
    },
  },
} as const;
