/**
 * Text as a terminal shows it: display width (colour codes take none, East Asian wide characters
 * and most emoji take two), control characters made harmless, and wrapping to a width.
 *
 * Invariants (the tables and help texts rely on them):
 * - A colour code (SGR, `ESC [ ... m`) is never cut: text is split only between whole codes and
 *   characters, and a colour open at the end of a wrapped line is closed there and opened again at
 *   the start of the next, so every line is complete on its own.
 * - No other control sequence reaches the terminal from a cell: other escape sequences are
 *   dropped and control characters (tabs, carriage returns, bells) become spaces, so text from a
 *   run (an error message, a name) cannot move the cursor or clear the screen.
 * - A word (text between spaces) of at most `unbreakable` columns is never split when it fits
 *   the line; longer words are split where the line ends.
 */

const SGR = /^\u001b\[[0-9;]*m/;
const ANY_SGR = /\u001b\[[0-9;]*m/g;
/** CSI (other than SGR), OSC and two-character escapes: dropped. */
const OTHER_ESCAPE = /\u001b(?:\[[0-9;?<=>!]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g;

/** Make `text` safe to print inside a layout: keeps SGR codes and newlines, neutralises the rest. */
export function sanitize(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .replace(OTHER_ESCAPE, (m) => (SGR.test(m) ? m : ''))
    .replace(/[\u0000-\u0009\u000b-\u001a\u001c-\u001f\u007f-\u009f]/g, ' ')
    .replace(/\u001b(?!\[[0-9;]*m)/g, ' ');
}

/** Columns one code point takes: 0 for combining marks and joiners, 2 for wide ones. */
function codePointWidth(cp: number): number {
  if (
    (cp >= 0x300 && cp <= 0x36f) ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    (cp >= 0x1ab0 && cp <= 0x1aff) ||
    (cp >= 0x20d0 && cp <= 0x20ff)
  )
    return 0;
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf && cp !== 0x303f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  )
    return 2;
  return 1;
}

/** Columns `text` takes on a terminal (one line; colour codes take none). */
export function displayWidth(text: string): number {
  let w = 0;
  for (const ch of text.replace(ANY_SGR, '')) w += codePointWidth(ch.codePointAt(0) ?? 0);
  return w;
}

/** `text` without colour codes. */
export function stripColor(text: string): string {
  return text.replace(ANY_SGR, '');
}

/** The pieces of `text`: whole SGR codes and single characters, with their widths. */
function pieces(text: string): Array<{ s: string; w: number }> {
  const out: Array<{ s: string; w: number }> = [];
  let i = 0;
  while (i < text.length) {
    const code = SGR.exec(text.slice(i, i + 32));
    if (code) {
      out.push({ s: code[0], w: 0 });
      i += code[0].length;
      continue;
    }
    const cp = text.codePointAt(i) ?? 0;
    const s = String.fromCodePoint(cp);
    out.push({ s, w: codePointWidth(cp) });
    i += s.length;
  }
  return out;
}

/** Which opening codes a closing parameter ends (0 ends all). */
const CLOSES: Record<string, (open: number) => boolean> = {
  '22': (o) => o === 1 || o === 2,
  '23': (o) => o === 3,
  '24': (o) => o === 4,
  '27': (o) => o === 7,
  '39': (o) => (o >= 30 && o <= 38) || (o >= 90 && o <= 97),
  '49': (o) => (o >= 40 && o <= 48) || (o >= 100 && o <= 107),
};

/** The colour codes still open after `line`, given those open before it. */
function openAfter(line: string, before: string[]): string[] {
  let open = [...before];
  for (const m of line.matchAll(ANY_SGR)) {
    const first = m[0].slice(2, -1).split(';')[0];
    if (first === '' || first === '0') open = [];
    else if (CLOSES[first]) open = open.filter((o) => !CLOSES[first](Number(o.slice(2, -1).split(';')[0])));
    else open.push(m[0]);
  }
  return open;
}

/** Close the colours each line leaves open and reopen them on the next, so lines stand alone. */
function balance(lines: string[]): string[] {
  let open: string[] = [];
  return lines.map((line) => {
    const prefix = open.join('');
    open = openAfter(line, open);
    return `${prefix}${line}${open.length > 0 ? '\u001b[0m' : ''}`;
  });
}

/** Split `word` into chunks of at most `width` columns (whole characters and codes). */
function splitWord(word: string, width: number): string[] {
  const out: string[] = [];
  let cur = '';
  let w = 0;
  for (const p of pieces(word)) {
    if (w + p.w > width && w > 0) {
      out.push(cur);
      cur = '';
      w = 0;
    }
    cur += p.s;
    w += p.w;
  }
  out.push(cur);
  return out;
}

/**
 * `text` (sanitized) as lines of at most `width` columns: wrapped on spaces, explicit newlines
 * kept, words longer than a line split; colour codes balanced per line (see the header).
 */
export function wrapText(text: string, width: number): string[] {
  const w = Math.max(1, width);
  const lines: string[] = [];
  for (const para of sanitize(text).split('\n')) {
    let line = '';
    let lineW = 0;
    for (const next of para.split(/ +/)) {
      let word = next;
      const ww = displayWidth(word);
      if (lineW > 0 && lineW + 1 + ww <= w) {
        line += ` ${word}`;
        lineW += 1 + ww;
        continue;
      }
      if (lineW > 0) lines.push(line);
      // A line of colour codes only (no width yet) carries over to the word that starts it.
      else word = line + word;
      if (ww <= w) {
        line = word;
        lineW = ww;
        continue;
      }
      const parts = splitWord(word, w);
      lines.push(...parts.slice(0, -1));
      line = parts[parts.length - 1] ?? '';
      lineW = displayWidth(line);
    }
    lines.push(line);
  }
  return balance(lines);
}

/** The widest word of `text` (in columns): the narrowest it wraps to without splitting a word. */
export function longestWord(text: string): number {
  let max = 0;
  for (const word of sanitize(text).split(/[ \n]+/)) max = Math.max(max, displayWidth(word));
  return max;
}

/** `text` padded with spaces to `width` columns (never cut). */
export function padEnd(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}
