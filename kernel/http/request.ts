import type { Context } from 'koa';
import type { KernelServices } from '../services.ts';
import { assertStorableQuery, readJsonBody } from './body.ts';
import { badRequest, notFound } from './errors.ts';
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
  assertStorableQuery(query);
  return validator(query);
}

/** A path id that is not a uuid cannot name anything: answer 404 with the resource's name. */
export function uuidParam(ctx: Context, name: string, resource: string): string {
  const value = (ctx.params as Record<string, string>)[name];
  if (!isUuid(value)) throw notFound(`${resource} not found`);
  return value.toLowerCase();
}
