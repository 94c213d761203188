// The preview of an HTML page, as Synapse makes it: its Open Graph tags (`og:*`, with Twitter's
// tags standing in for missing ones), else the `<title>` or first `<h1>`, the meta description or
// the first paragraphs, and an image named by `itemprop="image"`, the largest `<img>`, the first
// one, or the icon. A small tokenizer, not a full HTML parser: it reads tags and their attributes,
// skips comments, scripts and styles, and is bounded by the page's size (media_api.url_preview.
// max_spider_size). The bytes are decoded as the page's `<meta charset>` says, else its
// Content-Type, else UTF-8 when they are valid UTF-8, else windows-1252.

/** Open Graph tags kept at most (as Synapse: more is someone taking the piss). */
const MAX_TAGS = 50;
/** Longest description made from paragraphs. */
const MAX_DESCRIPTION = 500;
/** Longest value kept of a tag: previews are kept in memory, and no client shows more. */
const MAX_VALUE = 4096;
/** How far into the page `<meta charset>` is looked for (HTML's own rule says 1024 bytes). */
const CHARSET_SCAN = 1024;

/** The text of an HTML page, decoded by its declared charset. */
export function decodeHtml(body: Buffer, contentType: string | undefined): string {
  const head = body.subarray(0, CHARSET_SCAN).toString('latin1');
  const candidates: string[] = [];
  const meta = /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)/i.exec(head);
  if (meta !== null) candidates.push(meta[1]!);
  const xml = /^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_:.-]+)/i.exec(head);
  if (xml !== null) candidates.push(xml[1]!);
  const header = contentType === undefined ? null : /charset\s*=\s*["']?([A-Za-z0-9_:.-]+)/i.exec(contentType);
  if (header !== null) candidates.push(header[1]!);
  for (const label of candidates) {
    let decoder;
    try {
      decoder = new TextDecoder(label);
    } catch {
      // An unknown charset: the next candidate.
      continue;
    }
    return decoder.encoding === 'windows-1252' ? windows1252(body) : decoder.decode(body);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return windows1252(body);
  }
}

/** What windows-1252 has at 0x80-0x9F (undefined bytes stay as they are, as browsers do). */
const CP1252_HIGH = '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ';

/**
 * windows-1252, which HTML reads latin1 and ASCII as. Done here: some Node versions' TextDecoder
 * decode it as plain latin1, getting 0x80-0x9F (curly quotes, dashes, the euro) wrong.
 */
function windows1252(body: Buffer): string {
  return body.toString('latin1').replace(/[\x80-\x9f]/g, (c) => CP1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

interface Tag {
  readonly name: string;
  readonly attrs: ReadonlyMap<string, string>;
  /** Where the text after the tag starts. */
  readonly end: number;
}

/** Elements whose content is not markup. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'noscript', 'template']);

const ATTRIBUTE = /\s*([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/y;

/** The start tags of a page, with the text of raw-text elements (`title`) attached. */
function scan(html: string): { tags: Tag[]; titles: string[]; texts: { tag: string; text: string }[] } {
  const tags: Tag[] = [];
  const titles: string[] = [];
  const texts: { tag: string; text: string }[] = [];
  /** The h1 or p whose text is being read. */
  let reading: { tag: string } | undefined;
  let textAt = 0;
  let text = '';
  let paragraphChars = 0;
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    if (reading !== undefined) text += html.slice(textAt, lt);
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4);
      i = textAt = close < 0 ? html.length : close + 3;
      continue;
    }
    const next = html[lt + 1] ?? '';
    if (next === '!' || next === '?') {
      const close = html.indexOf('>', lt);
      i = textAt = close < 0 ? html.length : close + 1;
      continue;
    }
    const closing = next === '/';
    const nameMatch = /^[A-Za-z][A-Za-z0-9:-]*/.exec(html.slice(lt + (closing ? 2 : 1), lt + 40));
    if (nameMatch === null) {
      if (reading !== undefined) text += '<';
      i = textAt = lt + 1;
      continue;
    }
    const name = nameMatch[0].toLowerCase();
    let at = lt + (closing ? 2 : 1) + nameMatch[0].length;
    const attrs = new Map<string, string>();
    for (;;) {
      ATTRIBUTE.lastIndex = at;
      const m = ATTRIBUTE.exec(html);
      if (m === null) break;
      at = ATTRIBUTE.lastIndex;
      const key = m[1]!.toLowerCase();
      if (!attrs.has(key)) attrs.set(key, decodeEntities(m[2] ?? m[3] ?? m[4] ?? ''));
    }
    const gt = html.indexOf('>', at);
    const end = gt < 0 ? html.length : gt + 1;
    i = textAt = end;
    if (closing) {
      if (reading !== undefined && reading.tag === name) {
        const done = cleanText(text);
        if (name === 'p') paragraphChars += done.length;
        texts.push({ tag: name, text: done });
        reading = undefined;
      }
      continue;
    }
    tags.push({ name, attrs, end });
    // `<script/>` (written as XHTML) has no content to skip.
    if (RAW_TEXT.has(name) && html[end - 2] !== '/') {
      const closer = new RegExp(`</${name}`, 'ig');
      closer.lastIndex = end;
      const stop = closer.exec(html)?.index ?? html.length;
      if (name === 'title') titles.push(cleanText(html.slice(end, stop)));
      i = textAt = stop;
      continue;
    }
    // Only the first heading and the paragraphs a description needs are kept.
    const wanted = name === 'h1' ? !texts.some((t) => t.tag === 'h1') : name === 'p' && paragraphChars < MAX_DESCRIPTION;
    if (wanted && reading === undefined) {
      reading = { tag: name };
      text = '';
    }
  }
  return { tags, titles, texts };
}

/** HTML 4's Latin-1 entities, in code point order from 160 (the named references pages use most). */
const LATIN1_NAMES =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro ' +
  'para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil ' +
  'Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave ' +
  'Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml ' +
  'igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml';

const ENTITIES: ReadonlyMap<string, string> = new Map(Object.entries({
  ...Object.fromEntries(LATIN1_NAMES.split(' ').map((name, i) => [name, String.fromCharCode(160 + i)])),
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’',
  ldquo: '“', rdquo: '”', sbquo: '‚', bdquo: '„', bull: '•', trade: '™', euro: '€', OElig: 'Œ', oelig: 'œ', Scaron: 'Š',
  scaron: 'š', Yuml: 'Ÿ', zwj: '\u200d', zwnj: '\u200c', thinsp: '\u2009', ensp: '\u2002', emsp: '\u2003',
}));

function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,7});?/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : '\ufffd';
    }
    return ENTITIES.get(ref) ?? ENTITIES.get(ref.toLowerCase()) ?? whole;
  });
}

/** Text with its tags dropped, entities decoded and white space folded. */
function cleanText(html: string): string {
  return decodeEntities(html.replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim();
}

/** Paragraphs joined up to the longest description, cut at a word with an ellipsis. */
function summary(paragraphs: readonly string[]): string | undefined {
  let out = '';
  for (const p of paragraphs) {
    if (p === '') continue;
    out = out === '' ? p : `${out}\n\n${p}`;
    if (out.length >= MAX_DESCRIPTION) break;
  }
  if (out === '') return undefined;
  if (out.length <= MAX_DESCRIPTION) return out;
  const cut = out.slice(0, MAX_DESCRIPTION);
  const space = cut.lastIndexOf(' ');
  return `${(space > MAX_DESCRIPTION / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Twitter's tags that stand in for missing Open Graph ones. */
const TWITTER: Readonly<Record<string, string>> = {
  'twitter:title': 'og:title',
  'twitter:description': 'og:description',
  'twitter:image': 'og:image',
  'twitter:image:src': 'og:image',
};

/**
 * The preview of a page: `og:*` keys as the page gives them (strings), the fallbacks filled in.
 * `og:image` is made absolute against `pageUrl` and kept only when http(s).
 */
export function openGraph(html: string, pageUrl: URL): Record<string, string> {
  const { tags, titles, texts } = scan(html);
  const og: Record<string, string> = {};
  const twitter: Record<string, string> = {};
  let count = 0;
  for (const tag of tags) {
    if (tag.name !== 'meta') continue;
    const content = tag.attrs.get('content');
    if (content === undefined) continue;
    const property = (tag.attrs.get('property') ?? tag.attrs.get('name') ?? '').toLowerCase();
    if (property.startsWith('og:')) {
      if (count >= MAX_TAGS || property in og) continue;
      og[property] = content.trim().slice(0, MAX_VALUE);
      count++;
    } else if (property in TWITTER && !(TWITTER[property]! in twitter) && content.trim() !== '') {
      twitter[TWITTER[property]!] = content.trim().slice(0, MAX_VALUE);
    }
  }
  for (const [key, value] of Object.entries(twitter)) if (!(key in og)) og[key] = value;

  if (!og['og:title']) {
    const title = titles.find((t) => t !== '') ?? texts.find((t) => t.tag === 'h1' && t.text !== '')?.text;
    if (title !== undefined) og['og:title'] = title.slice(0, MAX_VALUE);
    else delete og['og:title'];
  }

  if (!og['og:image']) {
    const image = imageOf(tags);
    if (image !== undefined) og['og:image'] = image;
    else delete og['og:image'];
  }
  if (og['og:image'] !== undefined) {
    const absolute = absoluteHttpUrl(og['og:image'], pageUrl);
    if (absolute !== undefined) og['og:image'] = absolute;
    else delete og['og:image'];
  }

  if (!og['og:description']) {
    const meta = tags.find((t) => t.name === 'meta' && t.attrs.get('name')?.toLowerCase() === 'description' && (t.attrs.get('content') ?? '').trim() !== '');
    const description = meta?.attrs.get('content')?.trim().slice(0, MAX_VALUE) ?? summary(texts.filter((t) => t.tag === 'p').map((t) => t.text));
    if (description !== undefined) og['og:description'] = description;
    else delete og['og:description'];
  }
  return og;
}

/** The image a page without `og:image` stands for (Synapse's order). */
function imageOf(tags: readonly Tag[]): string | undefined {
  const itemprop = tags.find((t) => t.name === 'meta' && t.attrs.get('itemprop')?.toLowerCase() === 'image' && (t.attrs.get('content') ?? '') !== '');
  if (itemprop !== undefined) return itemprop.attrs.get('content');
  const images = tags.filter((t) => t.name === 'img' && (t.attrs.get('src') ?? '') !== '');
  const sized = images
    .map((t) => ({ src: t.attrs.get('src')!, area: Number(t.attrs.get('width')) * Number(t.attrs.get('height')), w: Number(t.attrs.get('width')), h: Number(t.attrs.get('height')) }))
    .filter((i) => i.w > 10 && i.h > 10)
    .sort((a, b) => b.area - a.area);
  if (sized.length > 0) return sized[0]!.src;
  if (images.length > 0) return images[0]!.attrs.get('src');
  const icon = tags.find((t) => t.name === 'link' && (t.attrs.get('rel') ?? '').toLowerCase().split(/\s+/).includes('icon') && (t.attrs.get('href') ?? '') !== '');
  return icon?.attrs.get('href');
}

function absoluteHttpUrl(text: string, base: URL): string | undefined {
  try {
    const url = new URL(text.trim(), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}
