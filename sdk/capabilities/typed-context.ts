import type { CapabilitySpec } from './define.ts';
import type { CapabilityId, CapabilitySpecs } from './index.ts';

type ContextOf<Spec> = Spec extends CapabilitySpec<string, infer Ctx> ? Ctx : never;
type UnionToIntersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void ? I : never;

/**
 * The `ctx` members the capabilities `Granted` give, each present and non-optional
 * (`PluginCapabilities<'database.namespace.write' | 'activity.write'>` has `db` and `activity`).
 */
export type PluginCapabilities<Granted extends CapabilityId> = [Granted] extends [never]
  ? unknown
  : UnionToIntersection<ContextOf<Extract<CapabilitySpecs, { id: Granted }>>>;
