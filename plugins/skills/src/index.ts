import { definePlugin } from './plugin.gen.ts';
import { kernelEvents } from '@keel/sdk/plugin';
import { createSkill, deleteSkill, getSkill, getSkillFile, listSkills, patchSkillFile } from './company-skill-routes.ts';
import { importSkills } from './import-route.ts';
import { scanProjects } from './scan-projects-route.ts';
import { getCatalogFile, getCatalogSkill, listCatalog } from './catalog/browse-routes.ts';
import { installCatalogSkill } from './catalog/install-route.ts';
import { auditSkill, installSkillUpdate, resetSkill, skillUpdateStatus } from './catalog/update-routes.ts';
import { getAgentSkills, syncAgentSkills } from './agent-skills/agent-skill-routes.ts';
import { followAgentSkills, resolveDesiredSkillsService } from './agent-skills/kernel-answers.ts';
import { runSkillsService } from './agent-skills/run-skills.ts';
import { exportCompany, importCompany } from './portability.ts';
import { managedSkillService } from './managed-skills.ts';

/**
 * Route handlers by plugin.json route key. Company skill routes and agent skill routes come
 * first; the catalog's routes (src/catalog/) follow as their own group.
 */
export default definePlugin({
  routes: {
    'list-skills': listSkills,
    'create-skill': createSkill,
    'import-skills': importSkills,
    'scan-projects': scanProjects,
    'get-skill': getSkill,
    'get-skill-file': getSkillFile,
    'patch-skill-file': patchSkillFile,
    'delete-skill': deleteSkill,
    'list-catalog': listCatalog,
    'get-catalog-skill': getCatalogSkill,
    'get-catalog-file': getCatalogFile,
    'install-catalog-skill': installCatalogSkill,
    'skill-update-status': skillUpdateStatus,
    'install-skill-update': installSkillUpdate,
    'reset-skill': resetSkill,
    'audit-skill': auditSkill,
    'get-agent-skills': getAgentSkills,
    'sync-agent-skills': syncAgentSkills,
  },
  services: {
    'resolve-desired-skills': resolveDesiredSkillsService, 'run-skills': runSkillsService, 'managed-skill': managedSkillService,
    'export-company': exportCompany, 'import-company': importCompany,
  },
  events: { [kernelEvents.agentCreated.name]: followAgentSkills, [kernelEvents.agentUpdated.name]: followAgentSkills },
});
