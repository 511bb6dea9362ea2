import type { RouteModule } from '../http/app.ts';

// Placeholder until this module lands.
export const assetRoutes: RouteModule = () => {};
