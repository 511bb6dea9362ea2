/**
 * The minimal YAML reader for SKILL.md frontmatter: flat scalars, nested objects (by
 * indentation), list literals (`[a, "b"]`) and `- item` lists, and block scalars (`|` keeps
 * line breaks, `>` folds them; chomping `-`/`+`). Not full YAML: anchors, tags, multi-document
 * streams and flow objects other than `{}` are read as plain text. Pure: no SDK, no I/O.
 */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };
export type YamlObject = { [key: string]: YamlValue };

export interface SplitSkillMarkdown {
  /** The frontmatter text (without the `---` fences), or null when the file has none. */
  frontmatter: string | null;
  body: string;
}

/** Splits `---\n<yaml>\n---\n<body>`; a file without a closed fence has no frontmatter. */
export function splitFrontmatter(markdown: string): SplitSkillMarkdown {
  const text = markdown.replace(/^\uFEFF/, '');
  const open = /^---[ \t]*\r?\n/.exec(text);
  if (!open) return { frontmatter: null, body: text };
  const rest = text.slice(open[0].length);
  const close = /(^|\r?\n)---[ \t]*(\r?\n|$)/.exec(rest);
  if (!close) return { frontmatter: null, body: text };
  return { frontmatter: rest.slice(0, close.index), body: rest.slice(close.index + close[0].length) };
}

interface Line { indent: number; text: string; raw: string }

function toLines(source: string): Line[] {
  return source.split(/\r?\n/).map((raw) => {
    const indent = raw.length - raw.replace(/^[ \t]+/, '').length;
    return { indent, text: raw.trim(), raw };
  });
}

const isSkippable = (line: Line) => line.text === '' || line.text.startsWith('#');

/** Reads frontmatter text into an object; lines it cannot read are skipped, never fatal. */
export function parseFrontmatter(source: string): YamlObject {
  const lines = toLines(source);
  const [value] = readMapping(lines, 0, 0);
  return value;
}

function readMapping(lines: Line[], start: number, indent: number): [YamlObject, number] {
  const out: YamlObject = {};
  let index = start;
  while (index < lines.length) {
    const line = lines[index]!;
    if (isSkippable(line)) { index += 1; continue; }
    if (line.indent < indent) break;
    if (line.indent > indent) { index += 1; continue; }
    const match = /^("[^"]*"|'[^']*'|[^:#][^:]*?)\s*:(?:\s+(.*)|)$/.exec(line.text);
    if (!match) { index += 1; continue; }
    const key = unquote(match[1]!.trim());
    const rest = stripComment(match[2] ?? '');
    index += 1;
    const block = /^([|>])([+-]?)(\d*)([+-]?)$/.exec(rest);
    if (block) {
      const chomp = block[2] || block[4] || '';
      const [text, next] = readBlockScalar(lines, index, indent, block[1] as '|' | '>', chomp);
      out[key] = text;
      index = next;
    } else if (rest === '') {
      const child = nextContent(lines, index);
      if (child !== -1 && lines[child]!.indent > indent) {
        const childIndent = lines[child]!.indent;
        if (lines[child]!.text.startsWith('- ') || lines[child]!.text === '-') {
          const [items, next] = readSequence(lines, child, childIndent);
          out[key] = items;
          index = next;
        } else {
          const [object, next] = readMapping(lines, child, childIndent);
          out[key] = object;
          index = next;
        }
      } else if (child !== -1 && lines[child]!.indent === indent && lines[child]!.text.startsWith('- ')) {
        // `key:` followed by a list at the same indentation is a list too (common YAML style).
        const [items, next] = readSequence(lines, child, indent);
        out[key] = items;
        index = next;
      } else {
        out[key] = null;
      }
    } else {
      out[key] = readScalar(rest);
    }
  }
  return [out, index];
}

function readSequence(lines: Line[], start: number, indent: number): [YamlValue[], number] {
  const items: YamlValue[] = [];
  let index = start;
  while (index < lines.length) {
    const line = lines[index]!;
    if (isSkippable(line)) { index += 1; continue; }
    if (line.indent !== indent || !(line.text.startsWith('- ') || line.text === '-')) break;
    const item = line.text === '-' ? '' : line.text.slice(2).trim();
    const pair = /^("[^"]*"|'[^']*'|[^:#\s"'][^:]*?)\s*:(?:\s+(.*)|)$/.exec(item);
    if (pair && !/^[a-z][a-z0-9+.-]*:\/\//i.test(item)) {
      // `- key: value` starts an object whose further keys sit under the first one.
      const itemIndent = indent + (line.raw.slice(line.indent).length - line.raw.slice(line.indent).replace(/^-\s+/, '').length);
      const synthetic: Line[] = [{ indent: itemIndent, text: item, raw: ' '.repeat(itemIndent) + item }];
      let next = index + 1;
      while (next < lines.length && (isSkippable(lines[next]!) || lines[next]!.indent >= itemIndent)) {
        synthetic.push(lines[next]!);
        next += 1;
      }
      items.push(readMapping(synthetic, 0, itemIndent)[0]);
      index = next;
    } else {
      items.push(readScalar(stripComment(item)));
      index += 1;
    }
  }
  return [items, index];
}

function nextContent(lines: Line[], start: number): number {
  for (let index = start; index < lines.length; index += 1) if (!isSkippable(lines[index]!)) return index;
  return -1;
}

/** A block scalar: the lines indented deeper than the key, with YAML's folding and chomping. */
function readBlockScalar(lines: Line[], start: number, parentIndent: number, style: '|' | '>', chomp: string): [string, number] {
  let index = start;
  const body: string[] = [];
  let blockIndent = -1;
  while (index < lines.length) {
    const line = lines[index]!;
    if (line.text === '') { body.push(''); index += 1; continue; }
    if (line.indent <= parentIndent) break;
    if (blockIndent === -1) blockIndent = line.indent;
    if (line.indent < blockIndent) break;
    body.push(line.raw.slice(blockIndent).replace(/\s+$/, ''));
    index += 1;
  }
  // Trailing blank lines belong to the chomping, not to the text.
  let trailing = 0;
  while (body.length > 0 && body[body.length - 1] === '') { body.pop(); trailing += 1; }
  let text = style === '|' ? body.join('\n') : foldLines(body);
  if (text !== '') {
    if (chomp === '+') text += '\n'.repeat(trailing + 1);
    else if (chomp !== '-') text += '\n';
  }
  return [text, index];
}

/** `>`: lines joined by spaces; an empty line is a line break; more-indented lines stay as they are. */
function foldLines(lines: string[]): string {
  let out = '';
  let previousBlank = true;
  let previousIndented = false;
  for (const line of lines) {
    if (line === '') { out += '\n'; previousBlank = true; continue; }
    const indented = /^\s/.test(line);
    if (out === '' || previousBlank) out += line;
    else out += (indented || previousIndented ? '\n' : ' ') + line;
    previousBlank = false;
    previousIndented = indented;
  }
  return out;
}

function stripComment(text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('"') || trimmed.startsWith("'") || trimmed.startsWith('[')) return trimmed;
  const hash = trimmed.search(/\s#/);
  return hash === -1 ? trimmed : trimmed.slice(0, hash).trim();
}

function unquote(text: string): string {
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    return text.slice(1, -1).replace(/\\(["\\/nt])/g, (_, char: string) => (char === 'n' ? '\n' : char === 't' ? '\t' : char));
  }
  if (text.length >= 2 && text.startsWith("'") && text.endsWith("'")) return text.slice(1, -1).replace(/''/g, "'");
  return text;
}

function readScalar(text: string): YamlValue {
  if (text.startsWith('[') && text.endsWith(']')) return splitList(text.slice(1, -1)).map(readScalar);
  if (text === '{}') return {};
  if (text.startsWith('"') || text.startsWith("'")) return unquote(text);
  if (text === '~' || text === 'null' || text === 'Null' || text === 'NULL') return null;
  if (/^(true|True|TRUE)$/.test(text)) return true;
  if (/^(false|False|FALSE)$/.test(text)) return false;
  if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(text)) return Number(text);
  return text;
}

/** The items of a list literal, split on commas outside quotes and nested brackets. */
function splitList(inner: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let current = '';
  for (const char of inner) {
    if (quote) {
      current += char;
      if (char === quote) quote = null;
    } else if (char === '"' || char === "'") {
      quote = char;
      current += char;
    } else if (char === '[') {
      depth += 1;
      current += char;
    } else if (char === ']') {
      depth -= 1;
      current += char;
    } else if (char === ',' && depth === 0) {
      items.push(current.trim());
      current = '';
    } else {
      current += char;
    }
  }
  if (current.trim() !== '') items.push(current.trim());
  return items;
}
