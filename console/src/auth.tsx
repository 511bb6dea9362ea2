import { useState } from 'react';
import { api, type Me } from './api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, useLoad } from './ui.tsx';

/** Sign-in and account creation for authenticated instances (browser sessions). */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [mode, setMode] = useState<'sign-in' | 'sign-up'>('sign-in');
  return (
    <main className="auth" id="main">
      <h1>Keel</h1>
      <h2>{mode === 'sign-in' ? 'Sign in' : 'Create an account'}</h2>
      {mode === 'sign-in' ? (
        <Form label="Sign in" submit="Sign in" onSubmit={async (fields) => {
          await api.post('/api/auth/sign-in', { email: fields.get('email'), password: fields.get('password') });
          onSignedIn();
        }}>
          <Field label="Email" name="email" type="email" required />
          <Field label="Password" name="password" type="password" required />
        </Form>
      ) : (
        <Form label="Create an account" submit="Create account" onSubmit={async (fields) => {
          await api.post('/api/auth/sign-up', { email: fields.get('email'), password: fields.get('password'), name: fields.get('name') || undefined });
          onSignedIn();
        }}>
          <Field label="Name" name="name" />
          <Field label="Email" name="email" type="email" required />
          <Field label="Password (at least 8 characters)" name="password" type="password" required />
        </Form>
      )}
      <button type="button" className="link" onClick={() => setMode(mode === 'sign-in' ? 'sign-up' : 'sign-in')}>
        {mode === 'sign-in' ? 'No account yet? Create one' : 'Have an account? Sign in'}
      </button>
    </main>
  );
}

/** The first-admin claim: offered to a signed-in user who is not an instance admin; the server says whether the instance is still unclaimed. */
export function ClaimBanner({ me, onClaimed }: { me: Me; onClaimed: () => void }) {
  const [gone, setGone] = useState(false);
  if (me.isInstanceAdmin || me.source !== 'session' || gone) return null;
  return (
    <section className="banner" aria-label="Claim this instance">
      <p>If this instance has no administrator yet, you can claim it and become its first admin.</p>
      <ActionButton kind="primary" action={async () => {
        try {
          await api.post('/api/bootstrap/claim', {});
          onClaimed();
        } catch (error) {
          if ((error as { code?: string }).code === 'instance_already_claimed' || (error as { code?: string }).code === 'claim_not_available') setGone(true);
          throw error;
        }
      }}>Claim first admin</ActionButton>
    </section>
  );
}

interface Challenge { id: string; status: string; clientName: string | null; keyName: string | null; expiresAt: string }

/** The page `keel auth login` points at: shows the waiting command-line client and approves it with this browser session. */
export function CliAuthApprove({ id }: { id: string }) {
  const challenge = useLoad(() => api.get<Challenge>(`/api/cli-auth/challenges/${encodeURIComponent(id)}`), [id]);
  const [done, setDone] = useState<string | null>(null);
  if (challenge.loading && !challenge.data) return <Loading what="the sign-in request" />;
  if (challenge.error) return <ErrorNote error={challenge.error} />;
  const view = challenge.data!;
  return (
    <section className="card narrow">
      <h1>Approve command-line sign-in</h1>
      <p><strong>{view.clientName ?? 'A command-line client'}</strong> asks for a board API key{view.keyName ? ` named “${view.keyName}”` : ''}.</p>
      <p>Status: <strong data-testid="challenge-status">{done ?? view.status}</strong>. Expires {new Date(view.expiresAt).toLocaleTimeString()}.</p>
      {view.status === 'pending' && !done ? (
        <div className="row">
          <ActionButton kind="primary" action={async () => { await api.post(`/api/cli-auth/challenges/${encodeURIComponent(id)}/approve`, {}); setDone('approved'); }}>Approve</ActionButton>
          <ActionButton action={async () => { await api.post(`/api/cli-auth/challenges/${encodeURIComponent(id)}/cancel`, {}); setDone('cancelled'); }}>Deny</ActionButton>
        </div>
      ) : null}
      {done === 'approved' ? <p role="status">Approved: the command line is signed in. You can close this page.</p> : null}
    </section>
  );
}
