import { claudeCode } from './claude-code.ts';
import { codexDriver } from './codex.ts';
import { cursorDriver } from './cursor.ts';
import type { ToolDriver } from './driver.ts';
import { geminiDriver } from './gemini.ts';
import { opencodeDriver } from './opencode.ts';
import { piDriver } from './pi.ts';

/**
 * The drivers of the tools this plugin runs, by adapter type. A type of plugin.json without a
 * driver here answers 409 adapter_unavailable when a run starts.
 */
const DRIVERS: ToolDriver[] = [claudeCode, codexDriver, geminiDriver, cursorDriver, opencodeDriver, piDriver];

const BY_TYPE = new Map(DRIVERS.map((driver) => [driver.adapterType, driver]));

export function driverFor(adapterType: string): ToolDriver | null {
  return BY_TYPE.get(adapterType) ?? null;
}
