import type { Actor } from '../auth/actor.ts';

/**
 * The parts of a company package that the kernel does not own (projects, issues, goals, budget
 * policies, skills, ...). A plugin takes part by declaring `portability` in its manifest
 * (capability `company.portability`); the extension host registers it here
 * (host/contributions/portability-parts.ts), so the kernel knows only this registry, as it
 * knows only the kernel points' one. A third-party plugin takes part the same way.
 */
export interface PartScope { companyId: string; actor: Actor }

/** A part as it travels in a package: structured data for the manifest plus markdown files. */
export interface PartExport { data: Record<string, unknown>; files: Record<string, string> }

export type CollisionStrategy = 'rename' | 'skip' | 'replace';
export type PlanAction = 'create' | 'update' | 'skip';

/** One line of an import plan: what happens to one entity of the package. */
export interface PlanItem { kind: string; key: string; name: string; action: PlanAction; targetName?: string; reason?: string }

export interface PartImportInput {
  mode: 'preview' | 'apply';
  strategy: CollisionStrategy;
  data: Record<string, unknown>;
  files: Record<string, string>;
  /**
   * Source id -> target id of what was imported before this part: `agents` from the kernel,
   * `<pluginKey>.<kind>` from earlier parts (for example `work.projects`). In a preview the
   * targets of entities still to be created are null.
   */
  ids: Record<string, Record<string, string | null>>;
  sourceCompanyId: string;
}

export interface PartImportResult { plan: PlanItem[]; ids?: Record<string, Record<string, string | null>> }

export interface PortabilityPart {
  owner: string;
  after: readonly string[];
  exportPart(scope: PartScope): Promise<PartExport>;
  /** A preview is a read-only call; an apply runs in the plugin's own transaction. */
  importPart(input: PartImportInput, scope: PartScope): Promise<PartImportResult>;
}

export class PortabilityParts {
  private readonly parts = new Map<string, PortabilityPart>();

  provide(part: PortabilityPart): () => void {
    this.parts.set(part.owner, part);
    return () => { if (this.parts.get(part.owner) === part) this.parts.delete(part.owner); };
  }

  get(owner: string): PortabilityPart | undefined {
    return this.parts.get(owner);
  }

  /** Every part, each after the parts it names under `after` (then by key), so id maps flow forward. */
  ordered(): PortabilityPart[] {
    const byKey = [...this.parts.values()].sort((a, b) => a.owner.localeCompare(b.owner));
    const done = new Set<string>();
    const out: PortabilityPart[] = [];
    const visit = (part: PortabilityPart, path: Set<string>) => {
      if (done.has(part.owner) || path.has(part.owner)) return;
      path.add(part.owner);
      for (const before of part.after) { const other = this.parts.get(before); if (other) visit(other, path); }
      done.add(part.owner);
      out.push(part);
    };
    for (const part of byKey) visit(part, new Set());
    return out;
  }
}
