import { useEffect, useRef, useState } from 'react';
import type { UiContributions } from '@keel/sdk/client';
import { api, errorText } from './api.ts';
import { ActionButton, useLoad } from './ui.tsx';

const KEY = /^[a-z][a-z0-9]*([-_.][a-z0-9]+)*$/;
const MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_PENDING = 8;

/**
 * What a plugin frame may ask of the console: `{keel: "request", id, kind: "data" | "action",
 * key, params}` (answered with `{keel: "response", id, ok, result | error}`), and `{keel:
 * "resize", height}`. Anything else, or a message from any window but the frame's own, is
 * dropped. The plugin and the company are the console's, never the frame's: a frame can only
 * reach its own plugin's handlers, for the company the console shows it in.
 */
export type FrameRequest = { keel: 'request'; id: string; kind: 'data' | 'action'; key: string; params: unknown };

export function parseFrameMessage(data: unknown): FrameRequest | { keel: 'resize'; height: number } | { keel: 'ready' } | null {
  if (typeof data !== 'object' || data === null) return null;
  const message = data as Record<string, unknown>;
  if (message.keel === 'ready') return { keel: 'ready' };
  if (message.keel === 'resize') return typeof message.height === 'number' && Number.isFinite(message.height) ? { keel: 'resize', height: message.height } : null;
  if (message.keel !== 'request') return null;
  if (typeof message.id !== 'string' || message.id.length > 100) return null;
  if (message.kind !== 'data' && message.kind !== 'action') return null;
  if (typeof message.key !== 'string' || message.key.length > 64 || !KEY.test(message.key)) return null;
  let size: number;
  try { size = JSON.stringify(message.params ?? null).length; } catch { return null; }
  if (size > MAX_MESSAGE_BYTES) return null;
  return { keel: 'request', id: message.id, kind: message.kind, key: message.key, params: message.params ?? null };
}

/** One slot contribution in a sandboxed frame (scripts, no same-origin: it reads no cookie and no console state). */
export function SlotFrame({ pluginKey, dataKey, label, companyId }: { pluginKey: string; dataKey?: string; label: string; companyId: string | null }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const [height, setHeight] = useState(120);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let pending = 0;
    const reply = (message: unknown) => frame.current?.contentWindow?.postMessage(message, '*');
    const onMessage = async (event: MessageEvent) => {
      // Only the frame's own window; its origin is opaque ("null"), so the source is what identifies it.
      if (!frame.current || event.source !== frame.current.contentWindow) return;
      const message = parseFrameMessage(event.data);
      if (!message) return;
      if (message.keel === 'resize') { setHeight(Math.min(Math.max(Math.round(message.height), 40), 2000)); return; }
      if (message.keel === 'ready') {
        try {
          const content = dataKey ? await api.post(`/api/plugins/${encodeURIComponent(pluginKey)}/data/${encodeURIComponent(dataKey)}`, { companyId: companyId ?? undefined }) : { lines: [] };
          reply({ keel: 'render', content });
        } catch (caught) {
          setError(errorText(caught));
        }
        return;
      }
      if (pending >= MAX_PENDING) { reply({ keel: 'response', id: message.id, ok: false, error: 'Too many requests in flight' }); return; }
      pending += 1;
      try {
        const result = await api.post(`/api/plugins/${encodeURIComponent(pluginKey)}/bridge/${message.kind}`, { key: message.key, params: message.params, companyId: companyId ?? undefined });
        reply({ keel: 'response', id: message.id, ok: true, result });
      } catch (caught) {
        reply({ keel: 'response', id: message.id, ok: false, error: errorText(caught) });
      } finally {
        pending -= 1;
      }
    };
    window.addEventListener('message', onMessage);
    return () => window.removeEventListener('message', onMessage);
  }, [pluginKey, dataKey, companyId]);
  return (
    <figure className="slot">
      <figcaption>{label} <span className="muted">({pluginKey})</span></figcaption>
      {error ? <p className="error" role="alert">{error}</p> : null}
      <iframe ref={frame} src="/plugin-frame.html" sandbox="allow-scripts" referrerPolicy="no-referrer" title={`${label}, from plugin ${pluginKey}`}
        data-plugin={pluginKey} style={{ height }} />
    </figure>
  );
}

/** Every contribution of enabled plugins to a named slot. */
export function PluginSlots({ slot, companyId }: { slot: string; companyId: string | null }) {
  const contributions = useLoad(() => api.uiContributions(), []);
  const slots = (contributions.data?.slots ?? []).filter((entry) => entry.slot === slot);
  if (slots.length === 0) return null;
  return (
    <section className="slots" aria-label="Plugin panels">
      {slots.map((entry) => <SlotFrame key={`${entry.pluginKey}/${entry.key}`} pluginKey={entry.pluginKey} dataKey={entry.dataKey} label={entry.label ?? entry.key} companyId={companyId} />)}
    </section>
  );
}

/**
 * Launchers of enabled plugins for a placement: buttons that run the plugin's action for the
 * company on screen. The answer's `message` (or the whole answer) is shown as text.
 */
export function PluginLaunchers({ placement, companyId }: { placement: string; companyId: string }) {
  const contributions = useLoad(() => api.uiContributions(), []);
  const [said, setSaid] = useState<string | null>(null);
  const launchers = (contributions.data?.launchers ?? []).filter((entry) => entry.placement === placement && entry.action);
  if (launchers.length === 0) return null;
  return (
    <div className="row" role="group" aria-label="Plugin actions">
      {launchers.map((entry) => (
        <ActionButton key={`${entry.pluginKey}/${entry.key}`} action={async () => {
          const answer = await api.post<unknown>(`/api/plugins/${encodeURIComponent(entry.pluginKey)}/actions/${encodeURIComponent(entry.action!)}`, { companyId });
          const message = (answer as { message?: unknown } | null)?.message;
          setSaid(typeof message === 'string' ? message : JSON.stringify(answer));
        }}>{entry.label}</ActionButton>
      ))}
      {said !== null ? <p role="status" className="muted">{said}</p> : null}
    </div>
  );
}
