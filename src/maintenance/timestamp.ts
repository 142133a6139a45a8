/**
 * Strict ISO 8601 instants with an explicit timezone, compared exactly. Checkpoints written by
 * LangGraph.js carry `2025-01-31T12:00:00.000Z`; the earlier Python release wrote
 * `2025-01-31T12:00:00.000000+00:00`. Both parse; a local time without a zone does not.
 */

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** Nanoseconds since the Unix epoch, or undefined when `text` is not an ISO 8601 instant with a zone. */
export function parseInstant(text: string): bigint | undefined {
  const m = INSTANT.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number, number, number, number, number,
  ];
  const second = Number(m[6] ?? "0");
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    return undefined; // 2025-02-30 and the like
  }
  let offsetMinutes = 0;
  if (!m[8]) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const fraction = BigInt((m[7] ?? "").padEnd(9, "0"));
  return (BigInt(date.getTime()) - BigInt(offsetMinutes) * 60_000n) * 1_000_000n + fraction;
}
