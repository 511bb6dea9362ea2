import type { Queryable } from '../db/database.ts';
import { validationFailed } from '../http/errors.ts';
import { bodyValidator, type Schema, type Validator } from '../http/validate.ts';

/**
 * Instance-wide settings, one instance_settings row per section (`general`,
 * `experimental`). Stored values are merged over the defaults on every read, so a setting
 * added later simply appears with its default. Patches are strict: a field the section
 * does not know is refused, naming it.
 */
export interface GeneralSettings {
  /** Display name of this instance (shown in the UI title and in CLI output). */
  instanceName: string;
  /** Mask the host's operating-system user name in activity details served by the API. */
  censorUsernameInLogs: boolean;
  /** Whether the UI's keyboard shortcuts are enabled. */
  keyboardShortcuts: boolean;
  /** IANA time zone used to display dates when a user has not chosen one. */
  timezone: string;
  /**
   * Whether feedback votes on agent output may be shared beyond this instance: `prompt` asks
   * each voter (their `shareable` flag decides), `allowed` and `not_allowed` decide for all.
   */
  feedbackDataSharingPreference: FeedbackSharingPreference;
  /**
   * Where shareable feedback traces of consenting companies are delivered (an HTTPS URL; plain
   * HTTP only to a loopback address), or null: then no trace leaves the instance. The operator
   * also opens its host to the work plugin (configuration `plugins.networkHosts`).
   */
  feedbackDataSharingEndpoint: string | null;
  /** How many daily, weekly and monthly database backups are kept. */
  backupRetention: BackupRetention;
}

export type FeedbackSharingPreference = 'prompt' | 'allowed' | 'not_allowed';

export interface BackupRetention {
  dailyDays: 3 | 7 | 14;
  weeklyWeeks: 1 | 2 | 4;
  monthlyMonths: 1 | 3 | 6;
}

export interface ExperimentalSettings {
  /** Summary slots (project, workspace and overview summaries). */
  enableSummaries: boolean;
  /** Execution environments and their leases. */
  enableEnvironments: boolean;
  /** Isolated execution workspaces per issue. */
  enableIsolatedWorkspaces: boolean;
  /** Automatic recovery of stalled issue graphs. */
  enableIssueGraphLivenessAutoRecovery: boolean;
  /** How far back (hours) the liveness recovery looks for stalled work. */
  issueGraphLivenessAutoRecoveryLookbackHours: number;
}

export interface InstanceSettings {
  general: GeneralSettings;
  experimental: ExperimentalSettings;
}

export type SettingsSection = keyof InstanceSettings;

export const SETTINGS_DEFAULTS: InstanceSettings = {
  general: {
    instanceName: 'Keel', censorUsernameInLogs: false, keyboardShortcuts: false, timezone: 'UTC',
    feedbackDataSharingPreference: 'prompt',
    feedbackDataSharingEndpoint: null,
    backupRetention: { dailyDays: 7, weeklyWeeks: 4, monthlyMonths: 1 },
  },
  experimental: {
    enableSummaries: false,
    enableEnvironments: false,
    enableIsolatedWorkspaces: false,
    enableIssueGraphLivenessAutoRecovery: false,
    issueGraphLivenessAutoRecoveryLookbackHours: 24,
  },
};

const PATCH_SCHEMAS: Record<SettingsSection, Schema> = {
  general: {
    type: 'object',
    additionalProperties: false,
    properties: {
      instanceName: { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S' },
      censorUsernameInLogs: { type: 'boolean' },
      keyboardShortcuts: { type: 'boolean' },
      timezone: { type: 'string', minLength: 1, maxLength: 100 },
      feedbackDataSharingPreference: { type: 'string', enum: ['prompt', 'allowed', 'not_allowed'] },
      feedbackDataSharingEndpoint: { type: ['string', 'null'], minLength: 1, maxLength: 2048 },
      // A patch may name some of the three; the others keep their values.
      backupRetention: {
        type: 'object',
        additionalProperties: false,
        minProperties: 1,
        properties: {
          dailyDays: { type: 'integer', enum: [3, 7, 14] },
          weeklyWeeks: { type: 'integer', enum: [1, 2, 4] },
          monthlyMonths: { type: 'integer', enum: [1, 3, 6] },
        },
      },
    },
  },
  experimental: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enableSummaries: { type: 'boolean' },
      enableEnvironments: { type: 'boolean' },
      enableIsolatedWorkspaces: { type: 'boolean' },
      enableIssueGraphLivenessAutoRecovery: { type: 'boolean' },
      issueGraphLivenessAutoRecoveryLookbackHours: { type: 'integer', minimum: 1, maximum: 720 },
    },
  },
};

const validators = Object.fromEntries(
  Object.entries(PATCH_SCHEMAS).map(([section, schema]) => [section, bodyValidator(schema)]),
) as Record<SettingsSection, Validator<Record<string, unknown>>>;

/** Validates a patch of one section: unknown fields first (all named at once), then types and ranges. */
export function validateSettingsPatch<S extends SettingsSection>(section: S, patch: Record<string, unknown>): Partial<InstanceSettings[S]> {
  const known = Object.keys(PATCH_SCHEMAS[section].properties as Record<string, unknown>);
  const unknown = Object.keys(patch).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw validationFailed(`Unknown ${section} settings field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`,
      unknown.map((path) => ({ path, message: 'is not an allowed field', keyword: 'additionalProperties' })));
  }
  const value = validators[section](patch) as Partial<InstanceSettings[S]>;
  if (section === 'general' && typeof patch.timezone === 'string' && !isTimeZone(patch.timezone)) {
    throw validationFailed('Invalid request body: timezone must be an IANA time zone such as "UTC" or "Europe/Berlin"',
      [{ path: 'timezone', message: 'must be an IANA time zone', keyword: 'format' }]);
  }
  if (section === 'general' && typeof patch.feedbackDataSharingEndpoint === 'string') {
    const refusal = endpointRefusal(patch.feedbackDataSharingEndpoint);
    if (refusal) throw validationFailed(`Invalid request body: feedbackDataSharingEndpoint ${refusal}`, [{ path: 'feedbackDataSharingEndpoint', message: refusal, keyword: 'format' }]);
  }
  return value;
}

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Why a feedback-sharing endpoint is refused: HTTPS, or HTTP to a loopback address only; no credentials in the URL. */
function endpointRefusal(text: string): string | null {
  let url: URL;
  try { url = new URL(text); } catch { return 'must be an absolute URL'; }
  if (url.username || url.password) return 'must not carry credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.test(url.hostname)) return null;
  return 'must be an https URL (http only to a loopback address)';
}

/** validateSettingsPatch in the shape parseBody expects. */
export function settingsPatchValidator<S extends SettingsSection>(section: S): Validator<Partial<InstanceSettings[S]>> {
  const validator = ((value: unknown) => validateSettingsPatch(section, value as Record<string, unknown>)) as Validator<Partial<InstanceSettings[S]>>;
  validator.schema = PATCH_SCHEMAS[section];
  return validator;
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The section's effective settings: stored values over defaults (unknown stored keys are dropped). */
export async function readSettings<S extends SettingsSection>(db: Queryable, section: S, lock = false): Promise<InstanceSettings[S]> {
  const row = await db.maybeOne<{ value: Record<string, unknown> }>(
    `select value from instance_settings where key = ?${lock ? ' for update' : ''}`, [section]);
  return merge(section, row?.value ?? {});
}

/** Applies a validated patch inside the caller's transaction; returns the new settings and what changed. */
export async function writeSettings<S extends SettingsSection>(tx: Queryable, section: S, patch: Partial<InstanceSettings[S]>): Promise<{ settings: InstanceSettings[S]; changes: Record<string, { from: unknown; to: unknown }> }> {
  // Create the row first so that concurrent patches serialise on its lock instead of racing the insert.
  await tx.exec(`insert into instance_settings (key, value) values (?, '{}'::jsonb) on conflict (key) do nothing`, [section]);
  const current = await readSettings(tx, section, true);
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  const settings = { ...current } as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(patch)) {
    const from = settings[key];
    const to = isObject(from) && isObject(value) ? { ...from, ...value } : value;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from, to };
    settings[key] = to;
  }
  if (Object.keys(changes).length > 0) {
    await tx.exec('update instance_settings set value = ?::jsonb, updated_at = now() where key = ?', [JSON.stringify(settings), section]);
  }
  return { settings: settings as unknown as InstanceSettings[S], changes };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merge<S extends SettingsSection>(section: S, stored: Record<string, unknown>): InstanceSettings[S] {
  const defaults = SETTINGS_DEFAULTS[section] as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = { ...defaults };
  for (const key of Object.keys(defaults)) {
    const value = stored[key];
    // A nested section (backupRetention) is merged field by field, so a field added later gets its default.
    if (isObject(defaults[key]) && isObject(value)) out[key] = { ...defaults[key], ...value };
    else if (value !== undefined && (typeof value === typeof defaults[key] || (defaults[key] === null && typeof value === 'string'))) out[key] = value;
  }
  return out as unknown as InstanceSettings[S];
}
