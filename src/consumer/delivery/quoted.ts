/** Names and ids from a message, quoted for a log line: a hostile one cannot forge log lines. */

/** A string from a message for a log line: as is when plain, else JSON-quoted; cut short. */
export function quoted(v: string): string {
  const short = v.length > 300 ? `${v.slice(0, 300)}…` : v;
  return /^[\x21-\x7e]*$/.test(short) ? short : JSON.stringify(short);
}
