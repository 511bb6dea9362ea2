/**
 * Timer slots of heartbeats and routines. Slot k of a timer is due at k × interval after the
 * epoch plus the timer's phase: a fixed offset in milliseconds, in [0, interval), taken from the
 * timer's id (the agent's for a heartbeat, the routine's for a routine), so that timers sharing an
 * interval spread their wakes over it instead of all waking in the same second (a thousand agents
 * at once would queue behind each other for many seconds). Every Keel process computes the same
 * phase, so every process names the same slot.
 */
export function slotPhaseMs(timerId: string, intervalSec: number): number {
  return Number.parseInt(timerId.replace(/-/g, '').slice(0, 12), 16) % (intervalSec * 1000);
}

/** When slot `slot` of the timer is due, in ms since the epoch. */
export const slotDueMs = (timerId: string, intervalSec: number, slot: number) => slot * intervalSec * 1000 + slotPhaseMs(timerId, intervalSec);

/** The first slot of the timer due after now. */
export const nextSlotOf = (timerId: string, intervalSec: number) =>
  Math.floor((Date.now() - slotPhaseMs(timerId, intervalSec)) / (intervalSec * 1000)) + 1;
