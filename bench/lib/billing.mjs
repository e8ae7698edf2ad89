// DynamoDB write request units as AWS bills them, computed from the requests actually sent
// (DynamoDB Local's ConsumedCapacity undercounts: no ConditionCheck, no old-image size, no
// delete+put for a changed index key). The rules, with their sources, are in bench/README.md
// ("Billed write units"):
//   PutItem / UpdateItem / DeleteItem   1 WRU per started KB of the larger of the old and the new
//                                        item (new item: its size; delete: the old item's size)
//   TransactWriteItems                  2 WRU per started KB per action (prepare + commit), a
//                                        ConditionCheck included, sized by the item it checks
//   a failed conditional write          as above without index copies, sized by the existing item
//                                        (an upper bound for a cancelled transaction)
//   each GSI                            1 WRU per started KB of the projected entry per index
//                                        write: an item entering or leaving the index is one write,
//                                        a projected attribute changing is one, a key changing is
//                                        two (delete + put)
// Old images come from a book of every item's last known image: seeded by a Scan (the caller's
// uncounted client) and kept by applying each successful write, UpdateExpression included (SET
// with values, if_not_exists, +/-; REMOVE). An update the evaluator cannot apply is counted in
// `unknown()` and sized from what it can apply.
import { itemSize } from './dynamo-size.mjs';

const KB = 1024;
const units = (bytes) => Math.max(1, Math.ceil(bytes / KB));

const keyOf = (table, key) => `${table}|${key.PK?.S ?? ''}|${key.SK?.S ?? ''}`;

function splitTop(s, sep = ',') {
  const out = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === sep && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur);
  return out.map((x) => x.trim()).filter(Boolean);
}

/** Apply an UpdateExpression to an image (top-level attributes only). Returns [image, ok]. */
export function applyUpdate(old, key, input) {
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const name = (p) => {
    const t = p.trim();
    return names[t] ?? t;
  };
  const img = { ...(old ?? {}), ...key };
  let ok = true;
  const expr = input.UpdateExpression ?? '';
  // Clauses: SET ..., REMOVE ..., ADD ..., DELETE ... in any order.
  const re = /\b(SET|REMOVE|ADD|DELETE)\b/g;
  const marks = [];
  for (let m = re.exec(expr); m; m = re.exec(expr)) marks.push({ kw: m[1], at: m.index, end: re.lastIndex });
  const operand = (t) => {
    t = t.trim();
    const ine = /^if_not_exists\s*\(([^,]+),\s*(:[\w]+)\s*\)$/.exec(t);
    if (ine) return img[name(ine[1])] ?? values[ine[2]];
    if (t.startsWith(':')) return values[t];
    if (/[.[]/.test(t)) ok = false;
    return img[name(t)];
  };
  for (let i = 0; i < marks.length; i++) {
    const body = expr.slice(marks[i].end, marks[i + 1]?.at ?? expr.length);
    for (const part of splitTop(body)) {
      if (marks[i].kw === 'SET') {
        const eq = part.indexOf('=');
        const target = name(part.slice(0, eq));
        if (/[.[]/.test(target)) ok = false;
        const rhs = part.slice(eq + 1).trim();
        const arith = splitTop(rhs, '+').length === 2 ? ['+', splitTop(rhs, '+')] : undefined;
        const minus = !arith && /\s-\s/.test(rhs) ? ['-', rhs.split(/\s-\s/)] : undefined;
        const op = arith ?? minus;
        if (op) {
          const [a, b] = op[1].map(operand);
          const n = Number(a?.N ?? 0) + (op[0] === '+' ? 1 : -1) * Number(b?.N ?? 0);
          img[target] = { N: String(n) };
        } else if (rhs.startsWith('list_append')) {
          ok = false;
        } else {
          const v = operand(rhs);
          if (v === undefined) ok = false;
          else img[target] = v;
        }
      } else if (marks[i].kw === 'REMOVE') {
        const target = name(part);
        if (/[.[]/.test(target)) ok = false;
        delete img[target];
      } else if (marks[i].kw === 'ADD') {
        const [p, v] = part.split(/\s+/);
        const t = name(p);
        const val = values[v];
        if (val?.N !== undefined) img[t] = { N: String(Number(img[t]?.N ?? 0) + Number(val.N)) };
        else ok = false;
      } else ok = false;
    }
  }
  return [img, ok];
}

/**
 * A billing book for one table schema (`TABLE_SCHEMA` from dist/src/schema/keys.js): `observe(call)` on
 * every finished DynamoDB call (in completion order) stores `call.billed = { total, table, gsi }`.
 */
export function createBilling(schema) {
  const book = new Map();
  let unknownUpdates = 0;
  let unknownOld = 0;
  const gsis = (schema?.gsis ?? []).map((g) => ({
    name: g.name,
    pk: g.pk,
    sk: g.sk,
    type: g.projection?.ProjectionType ?? 'ALL',
    attrs: g.projection?.NonKeyAttributes ?? [],
  }));

  const inIndex = (g, img) => img && img[g.pk] !== undefined && (g.sk === undefined || img[g.sk] !== undefined);
  const projected = (g, img) => {
    if (g.type === 'ALL') return img;
    const keep = ['PK', 'SK', g.pk, g.sk, ...(g.type === 'INCLUDE' ? g.attrs : [])];
    return Object.fromEntries(keep.filter((k) => k && img[k] !== undefined).map((k) => [k, img[k]]));
  };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const sortedJson = (o) =>
    JSON.stringify(
      Object.keys(o ?? {})
        .sort()
        .map((k) => [k, o[k]]),
    );

  /** Index write units for one item going from `old` to `img` (either may be undefined). */
  function indexUnits(old, img) {
    let n = 0;
    for (const g of gsis) {
      const a = inIndex(g, old);
      const b = inIndex(g, img);
      if (!a && b) n += units(itemSize(projected(g, img)));
      else if (a && !b) n += units(itemSize(projected(g, old)));
      else if (a && b) {
        const keyChanged = !same(old[g.pk], img[g.pk]) || (g.sk && !same(old[g.sk], img[g.sk]));
        if (keyChanged) n += units(itemSize(projected(g, old))) + units(itemSize(projected(g, img)));
        else if (sortedJson(projected(g, old)) !== sortedJson(projected(g, img)))
          n += units(Math.max(itemSize(projected(g, old)), itemSize(projected(g, img))));
      }
    }
    return n;
  }

  /** One write action: returns { table units, gsi units, next image (null = deleted) }. */
  function action(kind, table, input, transactional, ok) {
    const key = kind === 'Put' ? { PK: input.Item.PK, SK: input.Item.SK } : input.Key;
    const k = keyOf(table, key);
    const old = book.get(k);
    const mult = transactional ? 2 : 1;
    if (kind === 'ConditionCheck') {
      if (!old) unknownOld++;
      return { table: 2 * units(old ? itemSize(old) : 0), gsi: 0, k, next: old };
    }
    if (!ok) return { table: mult * units(old ? itemSize(old) : 0), gsi: 0, k, next: old };
    let next;
    if (kind === 'Put') next = input.Item;
    else if (kind === 'Delete') next = null;
    else {
      const [img, fine] = applyUpdate(old, key, input);
      if (!fine) unknownUpdates++;
      next = img;
    }
    const size = Math.max(old ? itemSize(old) : 0, next ? itemSize(next) : 0);
    return { table: mult * units(size), gsi: indexUnits(old, next ?? undefined), k, next };
  }

  function observe(call) {
    if (call.service !== 'ddb' || call.observer || !call.input) return;
    const input = call.input;
    const acts = [];
    if (call.command === 'TransactWriteItems') {
      for (const t of input.TransactItems ?? []) {
        const [kind, body] = Object.entries(t)[0];
        acts.push(action(kind, body.TableName, body, true, call.ok));
      }
    } else if (call.command === 'PutItem') acts.push(action('Put', input.TableName, input, false, call.ok));
    else if (call.command === 'UpdateItem') acts.push(action('Update', input.TableName, input, false, call.ok));
    else if (call.command === 'DeleteItem') acts.push(action('Delete', input.TableName, input, false, call.ok));
    else if (call.command === 'BatchWriteItem') {
      for (const [table, reqs] of Object.entries(input.RequestItems ?? {}))
        for (const r of reqs)
          acts.push(
            r.PutRequest
              ? action('Put', table, r.PutRequest, false, call.ok)
              : action('Delete', table, r.DeleteRequest, false, call.ok),
          );
    } else return;
    let table = 0;
    let gsi = 0;
    for (const a of acts) {
      table += a.table;
      gsi += a.gsi;
      if (call.ok) {
        if (a.next === null) book.delete(a.k);
        else if (a.next) book.set(a.k, a.next);
      }
    }
    call.billed = { total: table + gsi, table, gsi, failed: !call.ok };
  }

  return {
    observe,
    /** Seed the book with the table's current items (from an uncounted Scan). */
    seed(tableName, items) {
      for (const it of items) book.set(keyOf(tableName, it), it);
    },
    of: (call) => call.billed,
    unknown: () => ({ updatesNotFullyApplied: unknownUpdates, conditionChecksOfUnknownItems: unknownOld }),
    notes: () => ({ items: book.size }),
  };
}
