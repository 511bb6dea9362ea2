import { SecretMatcher } from '../../../sdk/shared/secret-forms.ts';

/** How many delivered values are remembered; beyond it the oldest are forgotten first. */
const MAX_VALUES = 512;

/**
 * Secret values the kernel delivered to this worker's isolate (`secrets.resolveEnvironment`):
 * the host knows exactly what it handed over, so it keeps those values out of everything the
 * plugin sends out (activity details, log lines, answers, errors, arguments of kernel calls),
 * in any common encoding (see secret-forms.ts). Plugin code may keep a value in any variable
 * and use it in a later call, for another company too, so they are remembered for as long as
 * the isolate lives, not per call. They are never handed back to the isolate.
 */
export class DeliveredSecrets {
  private readonly values: string[] = [];
  private matcher: SecretMatcher | null = null;

  add(values: readonly unknown[]): void {
    const fresh = values.filter((value): value is string => typeof value === 'string' && !this.values.includes(value));
    if (fresh.length === 0) return;
    this.values.push(...fresh);
    if (this.values.length > MAX_VALUES) this.values.splice(0, this.values.length - MAX_VALUES);
    this.matcher = new SecretMatcher(this.values);
  }

  /** The matcher, or null while nothing was delivered (every output then passes unchanged, at no cost). */
  get active(): SecretMatcher | null {
    return this.matcher && !this.matcher.empty ? this.matcher : null;
  }

  text(text: string): string {
    return this.active ? this.active.redact(text) : text;
  }

  value<T>(value: T): T {
    return this.active ? this.active.redactValue(value) as T : value;
  }
}
