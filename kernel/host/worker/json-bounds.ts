/**
 * Bounds for JSON text that plugin code hands to the host (call arguments, results). Text
 * nested too deeply parses fine but makes the host's own recursive JSON.stringify throw
 * (or, in an async path, crash the worker), so depth is checked on the text before anything
 * parses it: one linear scan, strings skipped.
 */
export const MAX_JSON_DEPTH = 200;

export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) {
      depth--;
    }
  }
  return false;
}
