import { useEffect, useState } from 'react';
import { Icon } from './icons.tsx';

/**
 * Light or dark: the browser's `prefers-color-scheme` until the operator picks one with the
 * toggle, which this browser then remembers (localStorage; a preference of the screen, not of
 * the account, so it is not sent to the server). The choice is `data-theme` on <html>, which
 * the tokens in styles.css follow.
 */
const KEY = 'keel.colour-scheme';
type Scheme = 'light' | 'dark';
const systemDark = () => window.matchMedia('(prefers-color-scheme: dark)');

function chosen(): Scheme | null {
  try {
    const value = window.localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch { return null; } // storage refused (a private window's policy): follow the system
}

function current(): Scheme {
  return chosen() ?? (systemDark().matches ? 'dark' : 'light');
}

/** Sets <html data-theme> now: called before the first render so no page paints in the other scheme. */
export function applyColourScheme(): Scheme {
  const scheme = current();
  document.documentElement.dataset.theme = scheme;
  return scheme;
}

export function ColourSchemeToggle() {
  const [scheme, setScheme] = useState<Scheme>(current);
  useEffect(() => {
    // Follows the system while nothing is chosen, and a choice made in another tab.
    const follow = () => setScheme(applyColourScheme());
    const media = systemDark();
    media.addEventListener('change', follow);
    window.addEventListener('storage', follow);
    return () => { media.removeEventListener('change', follow); window.removeEventListener('storage', follow); };
  }, []);
  const toggle = () => {
    const next: Scheme = scheme === 'dark' ? 'light' : 'dark';
    try { window.localStorage.setItem(KEY, next); } catch { /* not remembered, still applied */ }
    document.documentElement.dataset.theme = next;
    setScheme(next);
  };
  return (
    <button type="button" className="scheme-toggle" aria-pressed={scheme === 'dark'} onClick={toggle}>
      <Icon name={scheme === 'dark' ? 'moon' : 'sun'} /><span className="label-wide">Dark mode</span>
    </button>
  );
}
