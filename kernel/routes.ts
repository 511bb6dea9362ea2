import type { RouteModule } from './http/app.ts';
import { healthRoutes } from './http/health-routes.ts';

/** Kernel route modules, in registration order (specific paths before parameterised ones). */
export const kernelRouteModules: RouteModule[] = [
  healthRoutes,
];
