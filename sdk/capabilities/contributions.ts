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

export const contributionCapabilities = [toolsRegister, webhooksReceive, eventsSubscribe, eventsHooks, uiSlots, uiPageRegister, servicesProvide, kernelPoints, companyPortability] as const;
