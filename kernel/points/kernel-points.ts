import type { KernelPointName, KernelPointShapes } from '../../sdk/manifest/kernel-points.ts';
import type { Actor } from '../auth/actor.ts';

/** Who the kernel asks on behalf of: the request's company and actor. */
export interface PointScope { companyId: string; actor: Actor }

/** One answerer of a point; it returns the answer or throws the refusal (a KeelError) itself. */
export type PointProvider<P extends KernelPointName> = (input: KernelPointShapes[P]['input'], scope: PointScope) => Promise<KernelPointShapes[P]['output']>;

/**
 * Kernel points (sdk/manifest/kernel-points.ts): the kernel asks before a change and stores the
 * answer. The extension host registers the plugins that answer a point
 * (host/contributions/kernel-points.ts); the kernel knows only this registry, as it knows only
 * the event bus's hooks. Several answerers form a chain in their owners' key order: each answer
 * is merged into the input of the next, and the last answer is the result. With nobody
 * answering, `consult` returns null and the kernel keeps what it was given.
 */
export class KernelPoints {
  private readonly providers = new Map<KernelPointName, Array<{ owner: string; answer: PointProvider<any>; adapterTypes: readonly string[] | null }>>();

  /** `adapterTypes`: asked only about agents of these types (a point whose input has adapterType). */
  provide<P extends KernelPointName>(point: P, owner: string, answer: PointProvider<P>, adapterTypes: readonly string[] | null = null): () => void {
    const entry = { owner, answer, adapterTypes };
    const list = [...(this.providers.get(point) ?? []), entry].sort((a, b) => a.owner.localeCompare(b.owner));
    this.providers.set(point, list);
    return () => this.providers.set(point, (this.providers.get(point) ?? []).filter((other) => other !== entry));
  }

  /**
   * The owners that declared `adapterType` among the types they answer `point` for: the plugins
   * contributing that adapter type (a provider without `adapterTypes` answers every type and
   * contributes none).
   */
  contributors(point: KernelPointName, adapterType: string): string[] {
    return (this.providers.get(point) ?? []).filter((provider) => provider.adapterTypes?.includes(adapterType)).map((provider) => provider.owner);
  }

  async consult<P extends KernelPointName>(point: P, scope: PointScope, input: KernelPointShapes[P]['input']): Promise<KernelPointShapes[P]['output'] | null> {
    const adapterType = (input as { adapterType?: unknown }).adapterType;
    const list = (this.providers.get(point) ?? []).filter((provider) => !provider.adapterTypes || provider.adapterTypes.includes(String(adapterType)));
    if (list.length === 0) return null;
    let current = input;
    let answer: KernelPointShapes[P]['output'] | null = null;
    for (const provider of list) {
      answer = await provider.answer(current, scope) as KernelPointShapes[P]['output'];
      current = { ...current, ...answer };
    }
    return answer;
  }
}
