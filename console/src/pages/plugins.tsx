import { useState } from 'react';
import type { ExamplePlugin, PluginRecord } from '@keel/sdk/client';
import { api } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, Status, useLoad, when } from '../ui.tsx';
import { PluginFolders } from './plugin-folders.tsx';
import { PluginRequirements } from './plugin-requirements.tsx';

/** Whether the plugin asks for local folders (its manifest's `folders`, granted through `local.folders`). */
const hasFolders = (plugin: PluginRecord) => plugin.capabilities.some((capability) => capability.id === 'local.folders');

export function PluginsPage() {
  const plugins = useLoad(() => api.listPlugins(), []);
  const examples = useLoad(() => api.listExamples(), []);
  return (
    <section>
      <h1>Plugins</h1>
      {plugins.loading && !plugins.data ? <Loading what="plugins" /> : null}
      <ErrorNote error={plugins.error} />
      <Paged label="Installed plugins" items={plugins.data ?? []} empty="No plugins installed. Install an example or a folder below, then enable it with the grants it asks for." render={(plugin) => (
        <li key={plugin.pluginKey} className="row-item">
          <Link to={`/plugins/${plugin.pluginKey}`}>{plugin.displayName}</Link>
          <span className="muted">{plugin.pluginKey} {plugin.version}</span>
          <Status value={plugin.status} />
          {plugin.requiresExperimentalSettings?.length ? <PluginRequirements plugin={plugin} /> : null}
        </li>
      )} />
      <div className="grid2">
        <div className="card">
          <h2>Install an example</h2>
          <ErrorNote error={examples.error} />
          <ul className="rows">{(examples.data ?? []).filter((e: ExamplePlugin) => !e.installed).map((example: ExamplePlugin) => (
            <li key={example.pluginKey} className="row-item">
              <span>{example.displayName}</span>
              <ActionButton label={`Install ${example.displayName}`} action={async () => { await api.installPlugin({ packageName: example.packageName }); await Promise.all([plugins.reload(), examples.reload()]); }}>Install</ActionButton>
            </li>))}
          </ul>
        </div>
        <div className="card">
          <h2>Install from a folder or package</h2>
          <Form label="Install a plugin" submit="Install" onSubmit={async (fields) => {
            const source = String(fields.get('source') ?? '').trim();
            await api.installPlugin(source.startsWith('/') ? { localPath: source } : { packageName: source });
            await plugins.reload();
          }}>
            <Field label="Absolute folder path on the server, or npm package name" name="source" required />
          </Form>
        </div>
      </div>
    </section>
  );
}

interface ConfigAnswer { config: Record<string, unknown>; schema: { properties?: Record<string, { type?: string | string[]; description?: string; default?: unknown; enum?: unknown[] }>; required?: string[] } | null }

/** A form for the plugin's configuration, one field per property of its config schema (objects and arrays as JSON). */
function ConfigForm({ pluginKey }: { pluginKey: string }) {
  const config = useLoad(() => api.get<ConfigAnswer>(`/api/plugins/${pluginKey}/config`), [pluginKey]);
  const [saved, setSaved] = useState(false);
  if (config.error) return <ErrorNote error={config.error} />;
  if (!config.data) return <Loading what="configuration" />;
  const properties = Object.entries(config.data.schema?.properties ?? {});
  if (properties.length === 0) return <p className="muted">This plugin has no configuration.</p>;
  return (
    <Form label="Plugin configuration" submit="Save configuration" onSubmit={async (fields) => {
      const next: Record<string, unknown> = {};
      for (const [name, spec] of properties) {
        const raw = fields.get(name);
        const type = Array.isArray(spec.type) ? spec.type[0] : spec.type;
        if (type === 'boolean') { next[name] = raw === 'on'; continue; }
        if (raw === null || raw === '') continue;
        if (type === 'number' || type === 'integer') next[name] = Number(raw);
        else if (type === 'object' || type === 'array') {
          try { next[name] = JSON.parse(String(raw)); } catch { throw new Error(`${name} must be JSON`); }
        } else next[name] = String(raw);
      }
      await api.post(`/api/plugins/${pluginKey}/config`, { config: next });
      setSaved(true);
      await config.reload();
    }}>
      {properties.map(([name, spec]) => {
        const type = Array.isArray(spec.type) ? spec.type[0] : spec.type;
        const value = config.data!.config[name] ?? spec.default;
        const label = `${name}${spec.description ? ` — ${spec.description}` : ''}`;
        if (type === 'boolean') return <label key={name} className="check"><input type="checkbox" name={name} defaultChecked={value === true} /> {label}</label>;
        if (spec.enum) return <Field key={name} label={label} name={name}><select name={name} defaultValue={String(value ?? '')}>{spec.enum.map((option) => <option key={String(option)}>{String(option)}</option>)}</select></Field>;
        if (type === 'object' || type === 'array') return <Field key={name} label={`${label} (JSON)`} name={name} type="textarea" defaultValue={value === undefined ? '' : JSON.stringify(value, null, 2)} />;
        return <Field key={name} label={label} name={name} type={type === 'number' || type === 'integer' ? 'number' : 'text'} defaultValue={value === undefined ? '' : String(value)} />;
      })}
      {saved ? <p role="status">Saved.</p> : null}
    </Form>
  );
}

export function PluginPage({ pluginKey }: { pluginKey: string }) {
  const plugin = useLoad(() => api.getPlugin(pluginKey), [pluginKey]);
  const health = useLoad(() => api.pluginHealth(pluginKey), [pluginKey]);
  const logs = useLoad(() => api.pluginLogs(pluginKey, 100), [pluginKey]);
  const jobs = useLoad(() => api.get<Array<{ id: string; jobKey: string; schedule: string | null; status: string; lastRunAt?: string | null }>>(`/api/plugins/${pluginKey}/jobs`), [pluginKey]);
  if (plugin.loading && !plugin.data) return <Loading what="the plugin" />;
  if (plugin.error) return <ErrorNote error={plugin.error} />;
  const p = plugin.data as PluginRecord;
  const reload = async () => { await Promise.all([plugin.reload(), health.reload()]); };
  return (
    <section>
      <p><Link to="/plugins">Plugins</Link> / {p.pluginKey}</p>
      <div className="title-row"><h1>{p.displayName}</h1><Status value={p.status} /></div>
      {p.description ? <p>{p.description}</p> : null}
      <PluginRequirements plugin={p} />
      {p.status !== 'enabled' ? (
        <div className="card">
          <h2>Enable</h2>
          <Form label="Grant capabilities and enable" submit="Enable with these grants" onSubmit={async (fields) => {
            await api.enablePlugin(pluginKey, { grant: fields.getAll('grant').map(String) });
            await reload();
          }}>
            <fieldset>
              <legend>Capabilities this plugin asks for, with its reasons</legend>
              {p.capabilities.map((capability) => (
                <label key={capability.id} className="check"><input type="checkbox" name="grant" value={capability.id} defaultChecked /> <code>{capability.id}</code> — {capability.reason}</label>
              ))}
            </fieldset>
          </Form>
        </div>
      ) : (
        <div className="row">
          <p>Granted: {p.grantedCapabilities.map((id) => <code key={id} className="tag">{id}</code>)}</p>
          <ActionButton kind="danger" action={async () => { await api.disablePlugin(pluginKey); await reload(); }}>Disable</ActionButton>
        </div>
      )}
      <div className="grid2">
        <div className="card"><h2>Configuration</h2><ConfigForm pluginKey={pluginKey} /></div>
        <div className="card">
          <h2>Health</h2>
          <ErrorNote error={health.error} />
          {health.data ? <p>{health.data.healthy ? 'Healthy' : 'Unhealthy'} · worker {health.data.worker?.status ?? 'none'} · restarts {health.data.worker?.restarts ?? 0}</p> : null}
          <h3>Jobs</h3>
          <ul className="rows">{(jobs.data ?? []).map((job) => (
            <li key={job.id} className="row-item"><code>{job.jobKey}</code> <span className="muted">{job.schedule ?? 'manual'} · last {when(job.lastRunAt)}</span>
              <ActionButton label={`Run now: job ${job.jobKey}`} action={async () => { await api.post(`/api/plugins/${pluginKey}/jobs/${job.id}/trigger`, {}); await jobs.reload(); }}>Run now</ActionButton>
            </li>))}
          </ul>
        </div>
      </div>
      {hasFolders(p) ? (
        <div className="card"><h2>Local folders</h2><PluginFolders pluginKey={pluginKey} /></div>
      ) : null}
      <div className="card">
        <h2>Logs</h2>
        <ErrorNote error={logs.error} />
        <div className="log" role="log" aria-label="Plugin logs" tabIndex={0}>
          {(logs.data?.logs ?? []).map((line, index) => <div key={index}><span className="muted">{when(line.at)} {line.level}</span> {line.message}</div>)}
        </div>
      </div>
    </section>
  );
}
