import type { WireError } from '../protocol/messages.ts';

const WITHDRAWN = 'the answer was withdrawn';

/**
 * What a call answered in an isolate entry that did not end cleanly is failed with: code it left
 * running kept calling the host (`stray`), ran the CPU slice out (`outOfCpu`: its isolate is to be
 * replaced), ran out of memory, or failed otherwise.
 */
export function withdrawnAnswerError(key: string, message: string, isolate: { stray: boolean; disposed: boolean }): { wireError: WireError; outOfCpu: boolean } {
  if (isolate.stray) {
    return { wireError: { status: 503, code: 'plugin_crashed', message: `${key} answered, but code it left running kept calling the host; its isolate was replaced and ${WITHDRAWN}` }, outOfCpu: false };
  }
  if (/timed out/i.test(message)) {
    return { wireError: { status: 504, code: 'plugin_timeout', message: `${key} answered, but code it left running (a promise chain) exceeded its CPU time limit; ${WITHDRAWN}` }, outOfCpu: true };
  }
  if (isolate.disposed || /memory limit/i.test(message)) {
    return { wireError: { status: 503, code: 'plugin_out_of_memory', message: `${key} answered, but code it left running ran out of memory; it is being restarted and ${WITHDRAWN}` }, outOfCpu: false };
  }
  return { wireError: { status: 500, code: 'plugin_error', message: `${key} answered, but code it left running failed; ${WITHDRAWN}` }, outOfCpu: false };
}

/** A call whose isolate entry failed before it answered: out of memory (the isolate is gone), out of CPU time, or the plugin's own error. */
export function isolateFailureError(key: string, message: string, disposed: boolean): WireError {
  if (disposed || /memory limit/i.test(message)) return { status: 503, code: 'plugin_out_of_memory', message: `${key} ran out of memory; it is being restarted` };
  if (/timed out/i.test(message)) return { status: 504, code: 'plugin_timeout', message: `${key} exceeded its CPU time limit` };
  return { status: 500, code: 'plugin_error', message: `${key} failed: ${message.split('\n')[0]!.slice(0, 500)}` };
}
