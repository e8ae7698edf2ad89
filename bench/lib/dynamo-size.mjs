// Approximate DynamoDB item size, following the published sizing rules: attribute name bytes
// plus value bytes; strings and binaries by length; numbers ~1 byte per 2 significant digits + 1;
// booleans and nulls 1 byte; lists and maps 3 bytes + 1 byte per element + their contents.

const utf8 = (s) => Buffer.byteLength(s, 'utf8');

function numberSize(n) {
  const digits = String(n).replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

export function valueSize(v) {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.B !== undefined) return v.B.length ?? v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS) return v.SS.reduce((a, s) => a + utf8(s), 0);
  if (v.NS) return v.NS.reduce((a, n) => a + numberSize(n), 0);
  if (v.BS) return v.BS.reduce((a, b) => a + b.length, 0);
  if (v.L) return 3 + v.L.reduce((a, x) => a + 1 + valueSize(x), 0);
  if (v.M) return 3 + Object.entries(v.M).reduce((a, [k, x]) => a + 1 + utf8(k) + valueSize(x), 0);
  return 0;
}

export function itemSize(item) {
  let n = 0;
  for (const [k, v] of Object.entries(item)) n += utf8(k) + valueSize(v);
  return n;
}

/** Request units a write of `bytes` costs (1 per KB, rounded up; x2 when transactional). */
export const writeUnits = (bytes, transactional) => Math.max(1, Math.ceil(bytes / 1024)) * (transactional ? 2 : 1);
