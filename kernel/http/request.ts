import type { Context } from 'koa';
import type { KernelServices } from '../services.ts';
import { readJsonBody } from './body.ts';
import { badRequest, notFound, validationFailed } from './errors.ts';
import { isUuid, type Validator } from './validate.ts';

/**
 * Reads the JSON body and validates it. A missing body counts as `{}` so that routes whose
 * fields are all optional accept an empty POST; anything but an object is refused.
 */
export async function parseBody<T>(ctx: Context, kernel: KernelServices, validator: Validator<T>): Promise<T> {
  const raw = await readJsonBody(ctx, kernel.config.limits.jsonBodyBytes);
  const value = raw === undefined ? {} : raw;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badRequest('Request body must be a JSON object');
  return validator(value);
}

/** Validates the query string; a NUL character cannot even be sent to PostgreSQL as a parameter, so it is refused first. */
export function parseQuery<T>(ctx: Context, validator: Validator<T>): T {
  const query = { ...ctx.query };
  for (const [name, value] of Object.entries(query)) {
    if ((Array.isArray(value) ? value : [value]).some((item) => typeof item === 'string' && item.includes('\u0000'))) {
      throw validationFailed(`Invalid query: ${name} must not contain NUL (\\u0000) characters`, [{ path: name, message: 'must not contain NUL (\\u0000) characters', keyword: 'nul' }]);
    }
  }
  return validator(query);
}

/** A path id that is not a uuid cannot name anything: answer 404 with the resource's name. */
export function uuidParam(ctx: Context, name: string, resource: string): string {
  const value = (ctx.params as Record<string, string>)[name];
  if (!isUuid(value)) throw notFound(`${resource} not found`);
  return value.toLowerCase();
}
