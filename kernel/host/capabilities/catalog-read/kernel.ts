import { catalogRead as spec } from '../../../../sdk/capabilities/catalog.ts';
import type { InstanceCatalog } from '../../../../sdk/capabilities/catalog.ts';
import { CORE_TOOLS } from '../../../mcp/core-tools.ts';
import { enabledTools, type RunningPlugins } from '../../plugin-tools.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/** What the instance serves, as this process's host knows it: the plugins it runs and their contributions. */
export function instanceCatalog(host: RunningPlugins): InstanceCatalog {
  const tools = enabledTools(host);
  const plugins = [...host.plugins.values()].sort((a, b) => a.key.localeCompare(b.key)).map((plugin) => ({
    key: plugin.key,
    displayName: plugin.manifest.displayName,
    description: plugin.manifest.description ?? null,
    version: plugin.manifest.version,
    routes: plugin.routes.map(({ route, fullPath }) => ({ method: route.method, path: fullPath, auth: route.auth, description: route.description ?? null })),
    tools: tools.filter((tool) => tool.plugin === plugin).map(({ name, tool }) => ({ name, key: tool.key, description: tool.description, inputSchema: tool.inputSchema })),
  }));
  return {
    plugins,
    mcp: { endpoint: '/api/mcp', publicEndpoint: '/mcp', coreTools: CORE_TOOLS.map(({ name, description }) => ({ name, description })) },
  };
}

const catalogCapability: KernelCapability<never, 'plugins'> = {
  methods: { get: { run: async (call) => instanceCatalog(call.host) } },
};

export const kernelSide = kernelUnit(spec, { uses: { host: ['plugins'] }, serves: { catalog: catalogCapability.methods } });
