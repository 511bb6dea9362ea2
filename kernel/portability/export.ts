import type { Actor } from '../auth/actor.ts';
import { int, type Row } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import type { AgentRow } from '../tenancy/agents.ts';
import { PACKAGE_FORMAT, PACKAGE_VERSION, type CompanyPackage, type PackageAgent, type PackageInput } from './package.ts';
import { extractInputs } from './secret-inputs.ts';

/**
 * Builds a company's package: the kernel's own entities (the company, its agents with their
 * org chart and adapter configuration, secrets turned into declared inputs) read here, and
 * every registered plugin part asked for its own (kernel/portability/parts.ts). Terminated
 * agents are left out. `withConfig` false leaves adapter and runtime configuration out (a
 * caller that may not read it).
 */
export async function buildPackage(kernel: KernelServices, company: Row, actor: Actor, options: { withConfig: boolean }): Promise<CompanyPackage> {
  const files: Record<string, string> = {};
  const inputs: PackageInput[] = [];
  files['COMPANY.md'] = company.description ?? '';
  const rows = await kernel.db.query<AgentRow>(
    "select * from agents where company_id = ? and status <> 'terminated' order by created_at, url_key, id", [company.id]);
  const exported = new Set(rows.map((row) => row.id));
  const agents: PackageAgent[] = rows.map((row) => {
    const instructionsPath = `agents/${row.url_key}/AGENTS.md`;
    files[instructionsPath] = row.capabilities ?? '';
    const ref = { id: row.id, urlKey: row.url_key };
    return {
      id: row.id, name: row.name, urlKey: row.url_key, role: row.role, title: row.title, icon: row.icon,
      reportsTo: row.reports_to && exported.has(row.reports_to) ? row.reports_to : null,
      adapterType: row.adapter_type,
      adapterConfig: options.withConfig ? extractInputs(row.adapter_config ?? {}, ref, 'adapterConfig', inputs) : {},
      runtimeConfig: options.withConfig ? extractInputs(row.runtime_config ?? {}, ref, 'runtimeConfig', inputs) : {},
      budgetMonthlyCents: int(row.budget_monthly_cents), permissions: row.permissions ?? {},
      metadata: row.metadata === null ? null : extractInputs(row.metadata, ref, 'metadata', inputs),
      instructionsPath,
    };
  });
  const parts: CompanyPackage['manifest']['parts'] = {};
  for (const part of kernel.portability.ordered()) {
    const answer = await part.exportPart({ companyId: company.id, actor });
    const partFiles = Object.entries(answer.files ?? {});
    for (const [path, content] of partFiles) {
      // A part's files never replace the kernel's or another part's: the first writer keeps the path.
      if (!(path in files)) files[path] = String(content);
    }
    parts[part.owner] = { data: answer.data ?? {}, files: partFiles.map(([path]) => path) };
  }
  return {
    format: PACKAGE_FORMAT,
    version: PACKAGE_VERSION,
    manifest: {
      source: { companyId: company.id, exportedAt: new Date().toISOString() },
      company: {
        name: company.name, descriptionPath: 'COMPANY.md', budgetMonthlyCents: int(company.budget_monthly_cents),
        requireBoardApprovalForNewAgents: company.require_board_approval_for_new_agents === true, brandColor: company.brand_color ?? null,
      },
      agents,
      inputs,
      redacted: options.withConfig ? [] : ['agents.adapterConfig', 'agents.runtimeConfig'],
      parts,
    },
    files,
  };
}

/** What an export would hold, without the contents: counts per kind, the files and the declared inputs. */
export function summarize(pkg: CompanyPackage): Record<string, unknown> {
  const counts: Record<string, number> = { agents: pkg.manifest.agents.length };
  for (const [owner, part] of Object.entries(pkg.manifest.parts)) {
    for (const [kind, value] of Object.entries(part.data)) if (Array.isArray(value)) counts[`${owner}.${kind}`] = value.length;
  }
  return {
    company: { id: pkg.manifest.source.companyId, name: pkg.manifest.company.name },
    counts,
    files: Object.keys(pkg.files).sort(),
    inputs: pkg.manifest.inputs,
    redacted: pkg.manifest.redacted,
    parts: Object.keys(pkg.manifest.parts),
  };
}
