import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';

/** Where `npm install` (the root package's postinstall) builds the console. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../console/dist', import.meta.url));

/**
 * The console's policy: its own scripts, styles and API only. Plugin UI runs in frames of
 * `plugin-frame.html` (below), never in this document.
 */
export const CONSOLE_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data: blob:", "font-src 'self'",
  "connect-src 'self'", "frame-src 'self'", "worker-src 'none'", "object-src 'none'", "base-uri 'none'",
  "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

/**
 * The document plugin UI slots render in: sandboxed even when opened on its own (the CSP
 * `sandbox` directive without allow-same-origin gives it an opaque origin, so it is sent no
 * cookies and can read nothing of the console), with no network at all (`default-src 'none'`:
 * no fetch, no images from anywhere but data: URLs). Its inline scripts are the plugin's; the
 * only way out is postMessage to the console, which checks every message.
 */
export const PLUGIN_FRAME_CSP = [
  "default-src 'none'", "script-src 'unsafe-inline'", "style-src 'unsafe-inline'", 'img-src data:',
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'self'", 'sandbox allow-scripts',
].join('; ');

const FRAME_PATH = '/plugin-frame.html';
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};
const ENCODINGS = [{ name: 'br', suffix: '.br' }, { name: 'gzip', suffix: '.gz' }] as const;

interface Asset { type: string; etag: string; body: Buffer; encoded: Partial<Record<'br' | 'gzip', Buffer>> }

/** Reads the built console once: every file with its precompressed variants, keyed by URL path. */
export function loadConsoleAssets(dist = CONSOLE_DIST): Map<string, Asset> | null {
  if (!existsSync(join(dist, 'index.html'))) return null;
  const assets = new Map<string, Asset>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const file = join(dir, name);
      if (statSync(file).isDirectory()) { walk(file); continue; }
      if (name.endsWith('.br') || name.endsWith('.gz')) continue;
      const type = TYPES[extname(name)];
      if (!type) continue;
      const body = readFileSync(file);
      const encoded: Asset['encoded'] = {};
      for (const { name: encoding, suffix } of ENCODINGS) if (existsSync(file + suffix)) encoded[encoding] = readFileSync(file + suffix);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      assets.set(`/${relative(dist, file).split('\\').join('/')}`, { type, etag, body, encoded });
    }
  };
  walk(dist);
  return assets;
}

/** Paths the console never answers: the API, the MCP endpoint, and files that look like machine-readable text. */
function belongsElsewhere(path: string): boolean {
  return path === '/api' || path.startsWith('/api/') || path === '/mcp' || path.startsWith('/mcp/');
}

/**
 * Whether a request is a browser's navigation to a console page: it names text/html (a bare
 * wildcard from a script or a plugin's client does not), and its path is no missing file (a name
 * with an extension, such as a disabled plugin's `/feed.txt`, stays a 404) nor under /assets/.
 */
function wantsPage(accept: string, path: string): boolean {
  if (!/\btext\/html\b/i.test(accept) || path.startsWith('/assets/')) return false;
  return path === '/index.html' || !/\.[A-Za-z0-9]{1,10}$/.test(path.slice(path.lastIndexOf('/') + 1));
}

/**
 * Serves the console after every kernel and plugin route had its chance, so it shadows none of
 * them (a plugin's public pages, /llms.txt, /mcp). Hashed files under /assets/ are immutable
 * for a year; the page itself is revalidated on every load. Any other GET that asks for HTML
 * by name gets the page (the console routes in the browser); anything else falls through to the 404.
 */
export function consoleAssets(assets: Map<string, Asset> | null): Middleware {
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || belongsElsewhere(ctx.path)) return next();
    let asset = assets?.get(ctx.path);
    let path = ctx.path;
    if (!asset || path === '/index.html') {
      if (!wantsPage(ctx.get('accept'), path)) return next();
      if (!assets) {
        ctx.status = 503;
        ctx.type = 'text/plain; charset=utf-8';
        ctx.set('Cache-Control', 'no-store');
        ctx.body = 'The console is not built. Run `npm install` (it builds console/dist), then start Keel again.\n';
        return;
      }
      asset = assets.get('/index.html')!;
      path = '/index.html';
    }
    ctx.set('Content-Security-Policy', path === FRAME_PATH ? PLUGIN_FRAME_CSP : CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('Cache-Control', path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (path.endsWith('.html')) ctx.set('X-Frame-Options', path === FRAME_PATH ? 'SAMEORIGIN' : 'DENY');
    ctx.set('ETag', asset.etag);
    ctx.vary('Accept-Encoding');
    ctx.type = asset.type;
    if (ctx.get('If-None-Match') === asset.etag) { ctx.status = 304; return; }
    const accepted = ctx.acceptsEncodings('br', 'gzip', 'identity');
    const encoding = accepted === 'br' || accepted === 'gzip' ? accepted : null;
    const body = encoding && asset.encoded[encoding];
    if (encoding && body) ctx.set('Content-Encoding', encoding);
    ctx.status = 200;
    ctx.body = body || asset.body;
  };
}
