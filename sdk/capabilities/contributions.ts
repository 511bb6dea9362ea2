import { defineCapability, present } from './define.ts';

/**
 * Contribution points: capabilities without `ctx` methods, which the host enforces when it
 * mounts the plugin (a manifest that declares the contribution without the capability is
 * refused, and an ungranted contribution is never mounted).
 */
export const toolsRegister = defineCapability()({
  id: 'tools.register', summary: 'Offer tools that agents call', members: {},
  requiredBy: (manifest) => present(manifest, 'tools'),
});

export const webhooksReceive = defineCapability()({
  id: 'webhooks.receive', summary: 'Receive webhooks from outside services', members: {},
  requiredBy: (manifest) => present(manifest, 'webhooks'),
});

export const eventsSubscribe = defineCapability()({
  id: 'events.subscribe', summary: 'Be told of kernel events after they are committed', members: {},
  requiredBy: (manifest) => (manifest.events ?? []).flatMap((event, index) => (event.mode === 'after_commit' ? [`events.${index}.mode`] : [])),
});

export const eventsHooks = defineCapability()({
  id: 'events.hooks', summary: "Run inside the kernel's transaction when a kernel event happens, and veto it", members: {},
  requiredBy: (manifest) => (manifest.events ?? []).flatMap((event, index) => (event.mode === 'in_transaction' ? [`events.${index}.mode`] : [])),
});

export const uiSlots = defineCapability()({
  id: 'ui.slots', summary: 'Add panels and launchers to the console', members: {},
  requiredBy: (manifest) => (manifest.ui?.slots?.length || manifest.ui?.launchers?.length ? ['ui.slots'] : []),
});

export const uiPageRegister = defineCapability()({
  id: 'ui.page.register', summary: 'Add pages to the console', members: {},
  requiredBy: (manifest) => present(manifest, 'ui.pages'),
});

export const servicesProvide = defineCapability()({
  id: 'services.provide', summary: 'Offer typed services that other plugins call', members: {},
  requiredBy: (manifest) => present(manifest, 'services.provides'),
});

export const kernelPoints = defineCapability()({
  id: 'kernel.points', summary: 'Answer questions the kernel asks before a change (resolve what it stores, or refuse the request)', members: {},
  requiredBy: (manifest) => present(manifest, 'kernelPoints'),
});

export const companyPortability = defineCapability()({
  id: 'company.portability', summary: "Take part in company export and import: hand the kernel this plugin's part of a company package, and import it into a company", members: {},
  requiredBy: (manifest) => present(manifest, 'portability'),
});

/**
 * Projects a plugin keeps in each company: it declares them under `managed.projects` and asks the
 * work plugin's `managed-project` service for each (which requires this capability of its
 * caller), keyed by the calling plugin and the project key.
 */
export const projectsManaged = defineCapability()({
  id: 'projects.managed', summary: "Keep projects of its own in each company (managed.projects), made and found through the work plugin's managed-project service", members: {},
  requiredBy: (manifest) => present(manifest, 'managed.projects'),
});

/**
 * Skills a plugin ships and keeps installed in each company: declared under `managed.skills`,
 * installed through the skills plugin's `managed-skill` service (which requires this capability of
 * its caller), keyed `plugin/<plugin>/<slug>` and read-only.
 */
export const skillsManaged = defineCapability()({
  id: 'skills.managed', summary: "Keep skills it ships installed in each company (managed.skills), through the skills plugin's managed-skill service", members: {},
  requiredBy: (manifest) => present(manifest, 'managed.skills'),
});

/**
 * Routines a plugin keeps in each company: declared under `managed.routines`, made (paused) through
 * the runtime plugin's `managed-routine` service, which requires this capability of its caller;
 * the board resumes them, and while active they wake the plugin's managed agent on their interval.
 */
export const routinesManaged = defineCapability()({
  id: 'routines.managed', summary: "Keep routines that wake its managed agents in each company (managed.routines), through the runtime plugin's managed-routine service", members: {},
  requiredBy: (manifest) => present(manifest, 'managed.routines'),
});

export const contributionCapabilities = [toolsRegister, webhooksReceive, eventsSubscribe, eventsHooks, uiSlots, uiPageRegister, servicesProvide, kernelPoints, companyPortability, projectsManaged, skillsManaged, routinesManaged] as const;
