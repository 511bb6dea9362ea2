import type { Middleware } from 'koa';
import { notFound } from './errors.ts';

/**
 * Refuses, before any route reads it, a request path that cannot name anything: one whose
 * percent-encoding does not decode (a malformed escape, overlong UTF-8, an encoded surrogate)
 * or that holds an encoded NUL. Left to the routes, the kernel's router would hand the raw
 * text on as a parameter, plugin routes would throw from decodeURIComponent (a 500), and a NUL
 * cannot even be sent to PostgreSQL as a query parameter. Kernel and plugin routes answer the
 * same 404 the kernel gives any id that names nothing.
 */
export const pathGuard: Middleware = async (ctx, next) => {
  if (!usablePath(ctx.path)) throw notFound('Nothing is found at a path with malformed percent-encoding or an encoded NUL character');
  await next();
};

export function usablePath(path: string): boolean {
  if (!path.includes('%')) return true;
  if (path.includes('%00')) return false;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
