import { readdirSync, readFileSync } from 'node:fs';

/** One section of an API documentation page: the text under one heading. */
export interface DocSection { page: string; heading: string; text: string }
export interface DocPage { page: string; title: string; text: string; sections: DocSection[] }

const DOCS_DIR = new URL('../../docs/api/', import.meta.url);
let pages: DocPage[] | undefined;

/** The pages of docs/api/, read once: they ship with the release and do not change while it runs. */
export function apiDocPages(): DocPage[] {
  pages ??= readdirSync(DOCS_DIR).filter((file) => file.endsWith('.md')).sort().map((file) => {
    const text = readFileSync(new URL(file, DOCS_DIR), 'utf8');
    const page = file.slice(0, -3);
    return { page, title: /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? page, text, sections: sectionsOf(page, text) };
  });
  return pages;
}

function sectionsOf(page: string, text: string): DocSection[] {
  const sections: DocSection[] = [];
  let heading = '';
  let lines: string[] = [];
  const flush = () => { if (lines.join('').trim()) sections.push({ page, heading, text: lines.join('\n').trim() }); };
  for (const line of text.split('\n')) {
    const match = /^#{1,4}\s+(.+)$/.exec(line);
    if (match) { flush(); heading = match[1]!.trim(); lines = []; } else lines.push(line);
  }
  flush();
  return sections;
}

/** Lower-case words of two or more letters or digits: what a query and a text are compared by. */
export function terms(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9_]{2,}/g) ?? [];
}

/** How well a text answers query terms: each term's occurrences, headings counting more. */
export function score(queryTerms: string[], heading: string, text: string): number {
  const head = heading.toLowerCase();
  const body = text.toLowerCase();
  let total = 0;
  for (const term of queryTerms) {
    const inBody = body.split(term).length - 1;
    const inHead = head.split(term).length - 1;
    if (inBody + inHead === 0) return 0;
    total += inBody + 5 * inHead;
  }
  return total;
}

/** A short excerpt around the first query term found. */
export function snippet(text: string, queryTerms: string[], width = 240): string {
  const lower = text.toLowerCase();
  const at = Math.max(0, Math.min(...queryTerms.map((term) => lower.indexOf(term)).filter((index) => index >= 0), text.length) - 60);
  return text.slice(at, at + width).replace(/\s+/g, ' ').trim();
}
