export interface WordCount {
  words: number;
  characters: number;
  charactersWithoutSpaces: number;
  lines: number;
  topWords: Array<{ word: string; count: number }>;
}

// Letters and digits of any script; an apostrophe or a hyphen inside a word keeps it whole (don't, well-known).
const WORD = /[\p{L}\p{N}]+(?:['\u2019-][\p{L}\p{N}]+)*/gu;

/** Pure counting, kept apart from the plugin wiring so it reads (and tests) on its own. */
export function countText(text: string, top: number): WordCount {
  const words = text.match(WORD) ?? [];
  const frequency = new Map<string, number>();
  for (const word of words) {
    const key = word.toLocaleLowerCase();
    frequency.set(key, (frequency.get(key) ?? 0) + 1);
  }
  const topWords = [...frequency]
    .sort(([a, countA], [b, countB]) => countB - countA || a.localeCompare(b))
    .slice(0, top)
    .map(([word, count]) => ({ word, count }));
  return {
    words: words.length,
    characters: [...text].length,
    charactersWithoutSpaces: [...text.replace(/\s/gu, '')].length,
    lines: text === '' ? 0 : text.split(/\r\n|\r|\n/).length,
    topWords,
  };
}
