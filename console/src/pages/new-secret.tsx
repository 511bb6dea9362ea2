import { useState } from 'react';
import { ActionButton } from '../ui.tsx';

export interface SecretRef { id: string; name: string }
/** Stores a new company secret (POST /api/companies/{id}/secrets) and answers it; the caller reads its list again. */
export type CreateSecret = (name: string, value: string) => Promise<SecretRef>;

/**
 * A secret made where it is needed: a variable that should hold a key gets it from the vault
 * without leaving the form (the hiring wizard would lose its steps on the Secrets page). The
 * value is typed once into a password field, sent when "Store secret" is pressed, and never
 * read back; the variable then references the new secret. Plain inputs without a name, so the
 * surrounding form never submits the value.
 */
export function NewSecret({ suggestedName, label, createSecret, onCreated }: { suggestedName: string; label: string; createSecret: CreateSecret; onCreated: (secret: SecretRef) => void }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  if (!open) return <button type="button" onClick={() => { setName(suggestedName); setOpen(true); }}>New secret<span className="sr-only"> for {label}</span></button>;
  return (
    <div className="row new-secret" role="group" aria-label={`New secret for ${label}`}>
      <label className="field inline"><span>Secret name</span><input value={name} onChange={(event) => setName(event.target.value)} /></label>
      <label className="field inline"><span>Secret value</span><input type="password" autoComplete="off" value={value} onChange={(event) => setValue(event.target.value)} /></label>
      <ActionButton kind="primary" action={async () => {
        const secret = await createSecret(name.trim(), value);
        setValue('');
        setOpen(false);
        onCreated(secret);
      }}>Store secret</ActionButton>
      <button type="button" onClick={() => { setValue(''); setOpen(false); }}>Cancel</button>
    </div>
  );
}
