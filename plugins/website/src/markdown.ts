/** One line of plugin-supplied text for a list item or heading: no line breaks, bounded. */
export function oneLine(text: string | null | undefined, max = 300): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A JSON schema as a fenced block (a tool's input, for a reader or a model). */
export function schemaBlock(schema: unknown): string {
  return ['```json', JSON.stringify(schema, null, 2), '```'].join('\n');
}

/** Lines joined into a document that ends with one newline. */
export function document(lines: string[]): string {
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
