/**
 * Names for statement texts run again and again, so that each connection parses them once (the
 * pg driver prepares a named statement on first use per connection). Bounded: past `max`
 * distinct texts (SQL built dynamically), a text stays unnamed and runs as it is.
 */
export class StatementNames {
  private readonly names = new Map<string, string>();
  private readonly prefix: string;
  private readonly max: number;

  constructor(prefix: string, max: number) {
    this.prefix = prefix;
    this.max = max;
  }

  /** The text's name, or undefined once the bound is reached for a new text. */
  of(text: string): string | undefined {
    let name = this.names.get(text);
    if (!name && this.names.size < this.max) {
      name = `${this.prefix}${this.names.size}`;
      this.names.set(text, name);
    }
    return name;
  }
}
