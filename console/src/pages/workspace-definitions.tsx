import { useState } from 'react';
import { api } from '../api.ts';
import { ActionButton } from '../ui.tsx';
import { envOf, rowsOf, VariablesEditor, type VariableRow, type VariableValue } from './variables.tsx';

/** A runtime service or a workspace command as the API stores it on the workspace. */
export interface Definition {
  id: string; name: string; command: string; args?: string[]; env?: Record<string, VariableValue>;
  port?: number; url?: string; graceSec?: number; timeoutSec?: number;
}

type Kind = 'service' | 'command';

/** A definition while it is edited: every field as typed, arguments one per line. */
interface Draft { id: string; name: string; command: string; args: string; env: VariableRow[]; port: string; url: string; graceSec: string; timeoutSec: string }

function draftOf(definition: Definition): Draft {
  return {
    id: definition.id, name: definition.name, command: definition.command, args: (definition.args ?? []).join('\n'), env: rowsOf(definition.env),
    port: definition.port?.toString() ?? '', url: definition.url ?? '', graceSec: definition.graceSec?.toString() ?? '', timeoutSec: definition.timeoutSec?.toString() ?? '',
  };
}

/** The draft as the API's definition: empty optional fields are left out, numbers are sent as typed for the API to judge. */
function definitionOf(draft: Draft, kind: Kind): Definition {
  const number = (text: string) => (text.trim() ? Number(text.trim()) : undefined);
  const args = draft.args.split('\n').filter((line) => line !== '');
  const env = envOf(draft.env);
  const definition: Definition = { id: draft.id.trim(), name: draft.name.trim(), command: draft.command.trim() };
  if (args.length) definition.args = args;
  if (Object.keys(env).length) definition.env = env;
  if (kind === 'service') {
    if (number(draft.port) !== undefined) definition.port = number(draft.port);
    if (draft.url.trim()) definition.url = draft.url.trim();
    if (number(draft.graceSec) !== undefined) definition.graceSec = number(draft.graceSec);
  } else if (number(draft.timeoutSec) !== undefined) definition.timeoutSec = number(draft.timeoutSec);
  return definition;
}

const BLANK: Draft = { id: '', name: '', command: '', args: '', env: [], port: '', url: '', graceSec: '', timeoutSec: '' };

function DraftFields({ draft, kind, label, onChange, onRemove, secrets }: { draft: Draft; kind: Kind; label: string; onChange: (draft: Draft) => void; onRemove: () => void; secrets: Array<{ id: string; name: string }> }) {
  const input = (field: keyof Omit<Draft, 'env' | 'args'>, text: string, type = 'text', placeholder?: string) => (
    <label className="field"><span>{text}</span><input type={type} value={draft[field]} placeholder={placeholder} onChange={(event) => onChange({ ...draft, [field]: event.target.value })} /></label>
  );
  return (
    <fieldset>
      <legend>{label}</legend>
      {input('id', 'Id (a-z, 0-9, - and _)', 'text', 'web')}
      {input('name', 'Name')}
      {input('command', 'Command', 'text', '/usr/bin/npm')}
      <label className="field"><span>Arguments (one per line)</span><textarea rows={3} value={draft.args} onChange={(event) => onChange({ ...draft, args: event.target.value })} /></label>
      {kind === 'service' ? <>{input('port', 'Port (optional)', 'number')}{input('url', 'URL (optional)', 'text', 'http://localhost:3000')}{input('graceSec', 'Seconds to stop before a kill (default 5)', 'number')}</> : input('timeoutSec', 'Timeout in seconds (optional)', 'number')}
      <VariablesEditor label={`Variables of ${label}`} rows={draft.env} secrets={secrets} onChange={(env) => onChange({ ...draft, env })} />
      <div><button type="button" className="danger" onClick={onRemove}>Remove {label}</button></div>
    </fieldset>
  );
}

/**
 * The workspace's runtime services and commands edited as a form and saved together with one
 * PATCH (board users only); the API's refusal (a refused variable name, a duplicate id) is shown.
 */
export function DefinitionsEditor({ workspace, secrets, onSaved }: {
  workspace: { id: string; runtimeServices: Definition[]; workspaceCommands: Definition[] };
  secrets: Array<{ id: string; name: string }>;
  onSaved: () => Promise<void>;
}) {
  const [services, setServices] = useState<Draft[]>(() => workspace.runtimeServices.map(draftOf));
  const [commands, setCommands] = useState<Draft[]>(() => workspace.workspaceCommands.map(draftOf));
  const [saved, setSaved] = useState(false);
  const list = (kind: Kind, drafts: Draft[], set: (drafts: Draft[]) => void) => drafts.map((draft, index) => (
    <DraftFields key={index} kind={kind} draft={draft} secrets={secrets} label={`${kind === 'service' ? 'Service' : 'Command'} ${index + 1}`}
      onChange={(next) => { setSaved(false); set(drafts.map((d, i) => (i === index ? next : d))); }}
      onRemove={() => { setSaved(false); set(drafts.filter((_, i) => i !== index)); }} />
  ));
  return (
    <form className="form" aria-label="Definitions" onSubmit={(event) => event.preventDefault()}>
      <h3>Runtime services</h3>
      {services.length === 0 ? <p className="muted">No services defined.</p> : null}
      {list('service', services, setServices)}
      <div><button type="button" onClick={() => setServices([...services, BLANK])}>Add service</button></div>
      <h3>Commands</h3>
      {commands.length === 0 ? <p className="muted">No commands defined.</p> : null}
      {list('command', commands, setCommands)}
      <div><button type="button" onClick={() => setCommands([...commands, BLANK])}>Add command</button></div>
      <div className="form-actions">
        <ActionButton kind="primary" action={async () => {
          setSaved(false);
          await api.patch(`/api/execution-workspaces/${workspace.id}`, {
            runtimeServices: services.map((draft) => definitionOf(draft, 'service')),
            workspaceCommands: commands.map((draft) => definitionOf(draft, 'command')),
          });
          setSaved(true);
          await onSaved();
        }}>Save definitions</ActionButton>
        {saved ? <span role="status">Saved.</span> : null}
      </div>
    </form>
  );
}
