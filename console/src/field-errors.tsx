import { KeelApiError } from '@keel/sdk/client';
import { errorText } from './api.ts';

/**
 * An API refusal split by the form field it names, so that each message can sit under its
 * field: a validation failure's `issues` by their path (`models.0.outputCentsPerMTok` belongs
 * to `models`, and to its row 0), otherwise the first of the form's field names the message
 * itself starts with or quotes (`baseUrl must be https ...`). What names no field is the form's.
 */
export interface FieldErrors { byPath: Array<{ path: string; message: string }>; form: string | null }

export const NO_ERRORS: FieldErrors = { byPath: [], form: null };

const dotted = (path: unknown): string => (Array.isArray(path) ? path.join('.') : String(path ?? ''));

export function fieldErrorsOf(error: unknown, fields: readonly string[]): FieldErrors {
  if (!error) return NO_ERRORS;
  const issues = error instanceof KeelApiError ? error.issues ?? (error.details as { issues?: unknown } | undefined)?.issues : undefined;
  if (Array.isArray(issues) && issues.length) {
    const byPath = (issues as Array<{ path: unknown; message: string }>).map((issue) => {
      const path = dotted(issue.path);
      // The kernel's issues are worded after their path (`is required`); a plugin's may name it already.
      return { path, message: issue.message.startsWith(path) ? issue.message : `${path} ${issue.message}` };
    });
    const named = byPath.filter((issue) => fields.includes(issue.path.split('.')[0]!));
    return { byPath: named, form: named.length === byPath.length ? null : errorText(error) };
  }
  const text = errorText(error);
  const detailsField = error instanceof KeelApiError ? (error.details as { field?: unknown; path?: unknown } | undefined) : undefined;
  const named = [detailsField?.field, detailsField?.path].map(dotted).find((path) => fields.includes(path.split('.')[0]!))
    ?? fields.find((field) => new RegExp(`^${field}\\b|[\`'"]${field}[\`'"]`).test(text));
  return named ? { byPath: [{ path: named, message: text }], form: null } : { byPath: [], form: text };
}

/** The messages of one field (`models`), or of one part of it (`models.2`), under it. */
export function FieldError({ errors, path, exact }: { errors: FieldErrors; path: string; exact?: boolean }) {
  const mine = errors.byPath.filter((issue) => issue.path === path || (!exact && issue.path.startsWith(`${path}.`)));
  if (!mine.length) return null;
  return <>{mine.map((issue, index) => <p key={index} className="error" role="alert">{issue.message}</p>)}</>;
}
