// Table printing and small statistics helpers (no dependencies).

export function pct(values, p) {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
}
export const median = (values) => pct(values, 50);
export const mean = (values) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NaN);

/** Format a number: fixed decimals, or '—' for NaN / undefined. */
export function fmt(n, digits = 1) {
  if (n === undefined || n === null || Number.isNaN(n)) return '—';
  if (typeof n !== 'number') return String(n);
  return n.toFixed(digits);
}

/** A GitHub-flavoured markdown table: first column left-aligned, the rest right-aligned. */
export function table(title, head, rows, notes = []) {
  const cells = [head, ...rows].map((r) => r.map((c) => (c === undefined ? '' : String(c))));
  const width = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(width[i]) : c.padStart(width[i]))).join(' | ')} |`;
  const out = [
    `\n${title}\n`,
    line(cells[0]),
    `|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  ];
  for (const r of cells.slice(1)) out.push(line(r));
  for (const n of notes) out.push(`\n${n}`);
  return out.join('\n');
}
