import { useState } from 'react';
import { api } from '../api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, useLoad, when } from '../ui.tsx';
import { ExperimentalSettingsList } from './experimental-settings.tsx';

interface Backup { file: string; sizeBytes: number; takenAt: string }
interface General { instanceName: string; timezone: string; keyboardShortcuts: boolean; censorUsernameInLogs: boolean }

/** Instance settings and database backups (instance admins write; other boards read). */
export function SettingsPage() {
  const general = useLoad(() => api.get<General>('/api/instance/settings/general'), []);
  const [backup, setBackup] = useState<{ file: string; sizeBytes: number; durationMs: number } | null>(null);
  const backups = useLoad(() => api.get<Backup[]>('/api/instance/database-backups'), []);
  return (
    <section>
      <h1>Instance</h1>
      {general.loading && !general.data ? <Loading what="settings" /> : null}
      <ErrorNote error={general.error} />
      {general.data ? (
        <div className="card">
          <h2>General</h2>
          <Form label="General settings" submit="Save settings" onSubmit={async (fields) => {
            await api.patch('/api/instance/settings/general', {
              instanceName: fields.get('instanceName'), timezone: fields.get('timezone'),
              keyboardShortcuts: fields.get('keyboardShortcuts') === 'on', censorUsernameInLogs: fields.get('censor') === 'on',
            });
            await general.reload();
          }}>
            <Field label="Instance name" name="instanceName" required defaultValue={general.data.instanceName} />
            <Field label="Time zone (IANA)" name="timezone" required defaultValue={general.data.timezone} />
            <label className="check"><input type="checkbox" name="keyboardShortcuts" defaultChecked={general.data.keyboardShortcuts} /> Keyboard shortcuts</label>
            <label className="check"><input type="checkbox" name="censor" defaultChecked={general.data.censorUsernameInLogs} /> Hide the host user name in activity details</label>
          </Form>
        </div>
      ) : null}
      <div className="card">
        <h2>Experimental</h2>
        <p className="muted">Features that are still settling. Each is off until turned on here, for the whole instance.</p>
        <ExperimentalSettingsList />
      </div>
      <div className="card">
        <h2>Backups</h2>
        <p>A backup is a compressed copy of the database written on the server; retention follows the general setting.</p>
        <ActionButton kind="primary" action={async () => { setBackup(await api.post('/api/instance/database-backups', {})); await backups.reload(); }}>Back up now</ActionButton>
        {backup ? <p role="status">Written {backup.file} ({Math.round(backup.sizeBytes / 1024)} KiB in {backup.durationMs} ms).</p> : null}
        <h3>Past backups</h3>
        {backups.loading && !backups.data ? <Loading what="backups" /> : null}
        <ErrorNote error={backups.error} />
        {backups.data ? <Paged label="Past backups" items={backups.data} empty="No backups yet. “Back up now” writes the first one." render={(entry) => (
          <li key={entry.file} className="row-item"><code>{entry.file}</code> <span>{kib(entry.sizeBytes)}</span> <span className="muted">{when(entry.takenAt)}</span></li>
        )} /> : null}
      </div>
    </section>
  );
}

function kib(bytes: number): string {
  return bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
