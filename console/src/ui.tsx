import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { errorText } from './api.ts';
import { Icon } from './icons.tsx';

/** An error from the API, in its own words, announced to screen readers. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return <p className="error" role="alert">{errorText(error)}</p>;
}

/** A button that shows progress while its action runs and the API's message when it fails. */
export function ActionButton({ action, children, kind, disabled, label }: { action: () => Promise<unknown>; children: ReactNode; kind?: 'primary' | 'danger'; disabled?: boolean; label?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try { await action(); } catch (caught) { setError(caught); } finally { setBusy(false); }
  };
  return (
    <span className="action">
      <button type="button" className={kind} onClick={run} disabled={busy || disabled} aria-busy={busy} aria-label={label}>
        {busy ? <span className="spinner" aria-hidden="true" /> : null}{children}
      </button>
      <ErrorNote error={error} />
    </span>
  );
}

/** A form whose submit shows progress and the API's message; `onSubmit` gets the form's fields. */
export function Form({ onSubmit, children, submit, label }: { onSubmit: (fields: FormData) => Promise<unknown>; children: ReactNode; submit: string; label: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const ref = useRef<HTMLFormElement>(null);
  return (
    <form ref={ref} aria-label={label} className="form" onSubmit={async (event) => {
      event.preventDefault();
      setBusy(true);
      setError(null);
      try { await onSubmit(new FormData(event.currentTarget)); ref.current?.reset(); } catch (caught) { setError(caught); } finally { setBusy(false); }
    }}>
      {children}
      <div className="form-actions">
        <button type="submit" className="primary" disabled={busy} aria-busy={busy}>{busy ? <span className="spinner" aria-hidden="true" /> : null}{submit}</button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}

export function Field({ label, name, type = 'text', required, defaultValue, placeholder, step, children }: { label: string; name: string; type?: string; required?: boolean; defaultValue?: string; placeholder?: string; step?: string; children?: ReactNode }) {
  return (
    <label className="field">
      <span>{label}</span>
      {children ?? (type === 'textarea'
        ? <textarea name={name} required={required} defaultValue={defaultValue} placeholder={placeholder} rows={4} />
        : <input name={name} type={type} required={required} defaultValue={defaultValue} placeholder={placeholder} step={step} min={type === 'number' ? '0' : undefined} />)}
    </label>
  );
}

/** Loads data and reloads it on demand; the error is the API's. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => Promise<void> } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    setLoading(true);
    try { setData(await run()); setError(null); } catch (caught) { setError(caught); } finally { setLoading(false); }
  }, [run]);
  useEffect(() => { void reload(); }, [reload]);
  return { data, error, loading, reload };
}

/** Shows a list page by page: long lists never render more than `size` rows at once. */
export function Paged<T>({ items, size = 50, render, empty, label }: { items: T[]; size?: number; render: (item: T) => ReactNode; empty: ReactNode; label: string }) {
  const [pageIndex, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(items.length / size));
  const current = Math.min(pageIndex, pages - 1);
  if (items.length === 0) return <Empty>{empty}</Empty>;
  return (
    <>
      <ul className="rows" aria-label={label}>{items.slice(current * size, current * size + size).map(render)}</ul>
      {pages > 1 ? (
        <nav className="pager" aria-label={`${label} pages`}>
          <button type="button" onClick={() => setPage(current - 1)} disabled={current === 0}>Previous</button>
          <span>Page {current + 1} of {pages} ({items.length})</span>
          <button type="button" onClick={() => setPage(current + 1)} disabled={current >= pages - 1}>Next</button>
        </nav>
      ) : null}
    </>
  );
}

/** An empty list or page: what is missing and, in the same words, what to do next. */
export function Empty({ children, testId }: { children: ReactNode; testId?: string }) {
  return <div className="empty-state" data-testid={testId}><Icon name="empty" /><p>{children}</p></div>;
}

/**
 * A table in a frame that scrolls sideways on a narrow screen; the frame takes the focus so the
 * keyboard can scroll it too, and is named after the table.
 */
export function TableFrame({ label, children }: { label: string; children: ReactNode }) {
  return <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>{children}</div>;
}

export function Loading({ what }: { what: string }) {
  return <p className="muted" role="status"><span className="spinner" aria-hidden="true" />Loading {what}…</p>;
}

export function money(cents: number | null | undefined): string {
  return `$${((cents ?? 0) / 100).toFixed(2)}`;
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : '—';
}

export function Status({ value }: { value: string }) {
  return <span className={`badge s-${value}`}>{value.replace(/_/g, ' ')}</span>;
}
