import { useState } from 'react';
import { api } from '../api.ts';
import { Field, useLoad } from '../ui.tsx';
import type { CreateSecret } from './new-secret.tsx';
import { envOf, rowsOf, VariablesEditor, type VariableRow, type VariableValue } from './variables.tsx';

/** One adapter type as the server's catalog describes it (GET /api/llms/agent-configuration.json). */
export interface AdapterField { name: string; type: string; required: boolean; default?: string; values?: string[]; notes: string }
/** Whether this instance can run the type now (the catalog's `availability`): the reason and what to do when it cannot. */
export interface AdapterAvailability { status: 'ready' | 'tool_missing' | 'unavailable'; reason: string | null; installHint: string | null }
export interface AdapterType { type: string; summary: string; fields: AdapterField[]; example: Record<string, unknown>; tool?: { name: string; executable: string; install: string }; availability?: AdapterAvailability }

/**
 * The adapters that drive a coding-agent tool on this machine: their configuration is a form
 * drawn from the catalog (which fields a tool has, such as effort or max turns, and the values it
 * accepts). Other adapters keep the JSON editor, since their fields (headers, templates) are free.
 */
export const LOCAL_TOOL_TYPES = ['alpha_local', 'beta_local', 'gamma_local', 'delta_local', 'pi_local', 'cursor'];

const LABELS: Record<string, string> = {
  command: 'Command', cwd: 'Working directory', model: 'Model', effort: 'Effort', maxTurns: 'Max turns', instructionsFilePath: 'Instructions file',
  args: 'Arguments (one per line)', url: 'URL', method: 'Method', headers: 'Headers (JSON)', timeoutMs: 'Timeout (milliseconds)', payloadTemplate: 'Payload template (JSON)',
  apiKey: 'API key (a company secret)', apiBaseUrl: 'Run server URL', instructions: 'Instructions',
  modelProvider: 'Gateway provider (a name, or none)', extraArgs: 'Extra arguments (one per line)', toolSandbox: "Keep the tool's own sandbox", timeoutSec: 'Timeout (seconds)', graceSec: 'Grace before a kill (seconds)',
};

export function useAdapterCatalog() {
  return useLoad(() => api.get<{ adapterTypes: AdapterType[] }>('/api/llms/agent-configuration.json'), []);
}

const inputName = (field: string) => `adapterConfig.${field}`;

/**
 * A local tool's fields, each from the catalog: a choice where the field takes one of a few values,
 * a number, a check box, lines for a list, and the variables editor (plain values or the company's
 * secrets) for env, JSON for other objects, a choice of the company's secrets for a secret
 * reference. The hiring wizard draws every adapter's fields with it. `initial` is the stored
 * configuration when an agent is edited; `createSecret` lets a variable store a new secret.
 */
export function LocalToolFields({ adapter, secrets, initial, legend = 'Tool settings', createSecret }: { adapter: AdapterType; secrets: Array<{ id: string; name: string }>; initial?: Record<string, unknown>; legend?: string; createSecret?: CreateSecret }) {
  const [env, setEnv] = useState<VariableRow[]>(() => rowsOf((initial?.env ?? {}) as Record<string, VariableValue>));
  const value = (name: string) => initial?.[name];
  return (
    <fieldset className="adapter-fields" aria-label={`${adapter.type} settings`}>
      <legend>{legend}</legend>
      <p className="muted">{adapter.summary}</p>
      {adapter.fields.map((field) => {
        const label = LABELS[field.name] ?? field.name;
        const hint = <small className="muted">{field.notes}</small>;
        if (field.name === 'env') {
          return (
            <div key="env">
              <VariablesEditor label="Environment variables" rows={env} secrets={secrets} onChange={setEnv} createSecret={createSecret} />
              <input type="hidden" name={inputName('env')} value={JSON.stringify(envOf(env))} />
              {hint}
            </div>
          );
        }
        if (field.values) {
          const current = typeof value(field.name) === 'string' ? String(value(field.name)) : '';
          return (
            <div key={field.name}>
              <Field label={label} name={inputName(field.name)}>
                <select name={inputName(field.name)} defaultValue={current}>
                  <option value="">the tool's default</option>
                  {field.values.map((choice) => <option key={choice} value={choice}>{choice}</option>)}
                </select>
              </Field>{hint}
            </div>
          );
        }
        if (field.type === 'boolean') {
          return (
            <div key={field.name}>
              <label className="field inline"><input type="checkbox" name={inputName(field.name)} defaultChecked={value(field.name) === true} /><span>{label}</span></label>{hint}
            </div>
          );
        }
        if (field.type === 'secret reference') {
          const stored = value(field.name) as { secretId?: string } | undefined;
          return (
            <div key={field.name}>
              <Field label={label} name={inputName(field.name)}>
                <select name={inputName(field.name)} required={field.required} defaultValue={stored?.secretId ?? ''}>
                  <option value="">choose a secret</option>
                  {secrets.map((secret) => <option key={secret.id} value={secret.id}>{secret.name}</option>)}
                </select>
              </Field>{hint}
            </div>
          );
        }
        if (field.type === 'object') {
          const stored = value(field.name);
          return <div key={field.name}><Field label={label} name={inputName(field.name)} type="textarea" required={field.required} defaultValue={stored === undefined ? '' : JSON.stringify(stored, null, 2)} placeholder="{}" />{hint}</div>;
        }
        if (field.type === 'array of strings') {
          const lines = Array.isArray(value(field.name)) ? (value(field.name) as unknown[]).map(String).join('\n') : '';
          return <div key={field.name}><Field label={label} name={inputName(field.name)} type="textarea" defaultValue={lines} />{hint}</div>;
        }
        const stored = value(field.name);
        return (
          <div key={field.name}>
            <Field label={label} name={inputName(field.name)} type={field.type === 'integer' ? 'number' : 'text'} required={field.required}
              defaultValue={stored === undefined || stored === null ? '' : String(stored)} placeholder={field.default ? `default: ${field.default}` : undefined} />{hint}
          </div>
        );
      })}
    </fieldset>
  );
}

/**
 * The form's local tool fields as adapterConfig: each catalog field the form shows, an emptied one
 * as null (a PATCH then removes it; on create it is left out), numbers and lists as typed for the
 * server to judge. Keys the form does not show are not sent, so a PATCH keeps them.
 */
export function localToolConfig(adapter: AdapterType, fields: FormData, forPatch: boolean): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const set = (name: string, value: unknown) => { if (value !== null || forPatch) config[name] = value; };
  for (const field of adapter.fields) {
    const raw = fields.get(inputName(field.name));
    const text = typeof raw === 'string' ? raw.trim() : '';
    if (field.name === 'env') set('env', JSON.parse(typeof raw === 'string' && raw ? raw : '{}'));
    else if (field.type === 'boolean') set(field.name, raw === 'on');
    else if (field.type === 'secret reference') set(field.name, text ? { type: 'secret_ref', secretId: text, version: 'latest' } : null);
    else if (field.type === 'object') {
      if (!text) set(field.name, null);
      else {
        try { set(field.name, JSON.parse(text)); } catch { throw new Error(`${LABELS[field.name] ?? field.name} must be JSON, e.g. {"name": "value"}`); }
      }
    }
    else if (field.type === 'array of strings') {
      const lines = (typeof raw === 'string' ? raw : '').split('\n').map((line) => line.trim()).filter(Boolean);
      set(field.name, lines.length ? lines : null);
    } else if (field.type === 'integer') set(field.name, text ? Number(text) : null);
    else set(field.name, text || null);
  }
  return config;
}
