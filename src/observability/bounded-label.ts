/**
 * A label whose values come from outside (a model a request names): the first `limit` distinct
 * values pass as they are, later ones become "other", so one process never exports more than
 * `limit + 1` series for it.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly limit: number) {}

  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.limit) return "other";
    this.seen.add(value);
    return value;
  }
}
