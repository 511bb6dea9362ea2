/**
 * SVG logos are documents that a browser may render, so an upload is rebuilt from an
 * allow-list instead of being stored as sent: DOMPurify (SVG profile) over a jsdom window
 * drops scripts, event handlers, foreignObject and unknown elements; hooks and a second pass
 * below drop every reference that leaves the document (href/xlink:href not starting with
 * `#`, url() targets elsewhere, @import); the result is serialised as XML and parsed once
 * more as image/svg+xml to prove it is a well-formed SVG document. Content is additionally
 * served with a sandboxing Content-Security-Policy (asset-routes.ts).
 *
 * jsdom and DOMPurify take a few hundred milliseconds to load, so they are loaded on the first
 * SVG upload rather than at start-up. They are imported through a computed specifier so that
 * the DOM type library stays out of the kernel's type program; the small structural types
 * below describe the part of the DOM used here.
 */
const SVG_NS = 'http://www.w3.org/2000/svg';
const SVG_TYPE = 'image/svg+xml';

interface DomAttr { name: string; value: string }
interface DomElement {
  localName: string;
  namespaceURI: string | null;
  textContent: string | null;
  attributes: ArrayLike<DomAttr>;
  children: ArrayLike<DomElement>;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
  removeAttribute(name: string): void;
  remove(): void;
}
interface DomWindow { XMLSerializer: new () => { serializeToString(node: DomElement): string }; close(): void }
interface AttributeHookEvent { attrName: string; attrValue: string; keepAttr: boolean }
interface Purifier {
  sanitize(input: string, config: Record<string, unknown>): { children: ArrayLike<DomElement> };
  addHook(name: 'uponSanitizeAttribute', hook: (node: DomElement, event: AttributeHookEvent) => void): void;
  addHook(name: 'uponSanitizeElement', hook: (node: DomElement, event: { tagName: string }) => void): void;
}
type JsdomConstructor = new (html: string, options?: { contentType?: string }) => { window: DomWindow & { document: { documentElement: DomElement | null } } };
interface Engine { purify: Purifier; window: DomWindow; JSDOM: JsdomConstructor }

export type SvgSanitizeResult = { ok: true; svg: Buffer } | { ok: false; reason: string };

/** Elements removed wherever they appear, even if a future DOMPurify profile allowed them. */
const FORBIDDEN_ELEMENTS = new Set(['script', 'foreignobject', 'iframe', 'embed', 'object', 'handler', 'listener']);
/** Animation elements can rewrite attributes (including href) after sanitising, so they go as well. */
const ANIMATION_ELEMENTS = new Set(['animate', 'animatemotion', 'animatetransform', 'animatecolor', 'set', 'discard']);
/** Elements that carry no drawing of their own; an SVG made only of these is empty. */
const NON_DRAWING = new Set(['title', 'desc', 'metadata', 'defs', 'style']);

const PURIFY_CONFIG = {
  USE_PROFILES: { svg: true, svgFilters: true },
  // <use> with an in-document reference is common in exported logos; external targets are stripped by the hooks.
  ADD_TAGS: ['use'],
  FORBID_TAGS: ['script', 'foreignObject', 'foreignobject', ...ANIMATION_ELEMENTS],
  ADD_FORBID_CONTENTS: ['foreignObject', 'foreignobject'],
  FORBID_ATTR: ['xml:base'],
  RETURN_DOM_FRAGMENT: true,
};

let engine: Promise<Engine> | undefined;

async function loadEngine(): Promise<Engine> {
  const importByName = (name: string): Promise<any> => import(name);
  const [jsdom, dompurify] = await Promise.all([importByName('jsdom'), importByName('dompurify')]);
  const JSDOM = jsdom.JSDOM as JsdomConstructor;
  const window = new JSDOM('').window;
  const purify = (dompurify.default as (window: unknown) => Purifier)(window);
  purify.addHook('uponSanitizeAttribute', (_node, event) => {
    if (attributeIsUnsafe(event.attrName, event.attrValue ?? '')) event.keepAttr = false;
  });
  purify.addHook('uponSanitizeElement', (node, event) => {
    // Emptied rather than removed: DOMPurify is still walking this node.
    if (event.tagName === 'style' && cssIsUnsafe(node.textContent ?? '')) node.textContent = '';
  });
  return { purify, window, JSDOM };
}

function engineOnce(): Promise<Engine> {
  engine ??= loadEngine().catch((error) => { engine = undefined; throw error; });
  return engine;
}

/** url() targets other than a fragment of this document; also CSS that can fetch or run code. */
function hasExternalUrl(text: string): boolean {
  for (const match of text.matchAll(/url\s*\(\s*(['"]?)\s*([^)]*)/gi)) {
    if (!match[2]!.trim().startsWith('#')) return true;
  }
  return /(?:image-set|image|src|cross-fade)\s*\(\s*['"]/i.test(text);
}

function cssIsUnsafe(text: string): boolean {
  // A backslash is how CSS spells escapes (`u\72l(`), which would hide the checks below.
  return /@import|expression\s*\(|javascript:|-moz-binding|behavior\s*:|\\/i.test(text) || hasExternalUrl(text);
}

function attributeIsUnsafe(rawName: string, value: string): boolean {
  const name = rawName.toLowerCase();
  if (name.startsWith('on')) return true;
  if (name === 'href' || name.endsWith(':href')) return !value.trim().startsWith('#');
  if (name === 'xml:base' || name === 'src') return true;
  return cssIsUnsafe(value);
}

/** The second pass: whatever DOMPurify kept is checked again with the same rules. */
function scrub(root: DomElement): void {
  const elements = [root, ...Array.from(root.querySelectorAll('*'))];
  for (const element of elements) {
    const name = element.localName.toLowerCase();
    if (element !== root && (FORBIDDEN_ELEMENTS.has(name) || ANIMATION_ELEMENTS.has(name))) { element.remove(); continue; }
    if (name === 'style' && cssIsUnsafe(element.textContent ?? '')) { element.remove(); continue; }
    for (const attr of Array.from(element.attributes)) {
      if (attributeIsUnsafe(attr.name, attr.value)) element.removeAttribute(attr.name);
    }
  }
}

function hasDrawing(root: DomElement): boolean {
  return Array.from(root.children).some((child) => !NON_DRAWING.has(child.localName.toLowerCase()));
}

/**
 * Sanitises an uploaded SVG. Returns the cleaned document, or the reason it was refused:
 * not UTF-8 text, empty, not an SVG, or nothing drawable left once unsafe parts are gone.
 */
export async function sanitizeSvg(input: Buffer): Promise<SvgSanitizeResult> {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(input).replace(/^\uFEFF/, '').trim();
  } catch {
    return { ok: false, reason: 'SVG must be UTF-8 text' };
  }
  if (!text) return { ok: false, reason: 'SVG is empty' };
  if (!/<svg[\s/>]/i.test(text)) return { ok: false, reason: 'File is not an SVG document' };
  const { purify, window, JSDOM } = await engineOnce();
  const fragment = purify.sanitize(text, PURIFY_CONFIG);
  const root = Array.from(fragment.children).find((child) => child.localName === 'svg' && child.namespaceURI === SVG_NS);
  if (!root) return { ok: false, reason: 'SVG has no <svg> root element after sanitizing' };
  scrub(root);
  if (!hasDrawing(root)) return { ok: false, reason: 'SVG is empty after sanitizing (nothing safe to draw remains)' };
  const output = new window.XMLSerializer().serializeToString(root);
  let check: InstanceType<JsdomConstructor> | undefined;
  try {
    check = new JSDOM(output, { contentType: SVG_TYPE });
    const element = check.window.document.documentElement;
    if (!element || element.localName !== 'svg' || element.namespaceURI !== SVG_NS) {
      return { ok: false, reason: 'SVG could not be sanitized into a well-formed document' };
    }
  } catch {
    return { ok: false, reason: 'SVG could not be sanitized into a well-formed document' };
  } finally {
    check?.window.close();
  }
  return { ok: true, svg: Buffer.from(output, 'utf8') };
}
