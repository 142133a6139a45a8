/**
 * The size bounds of resumable runs' records, in bytes: one run's (STREAM_RESUME_MAX_RUN_BYTES), one
 * user's runs together (STREAM_RESUME_MAX_USER_BYTES) and all runs together (STREAM_RESUME_MAX_BYTES),
 * each counted in one process: the record's process (a one-process service, the primary) or the
 * worker that writes the run to Redis.
 */
export interface RecordBounds {
  readonly maxRunBytes: number;
  readonly maxUserBytes: number;
  readonly maxTotalBytes: number;
}

/** What an entry costs besides its JSON: the object (or Redis stream entry) that holds it. */
const ENTRY_OVERHEAD = 64;

/** The bytes an entry whose JSON is `json` characters long counts for. */
export function entryBytes(json: number): number {
  return json + ENTRY_OVERHEAD;
}

/** One run's record as the budget counts it. */
export class BudgetedRecord {
  bytes = 0;
  ended = false;
  /** No longer counted: dropped by a bound, or released when it expired. */
  gone = false;
  dropped = false;

  constructor(
    readonly user: string,
    /** Forget the record's entries (called once, when a bound drops it). */
    readonly onDrop: () => void,
  ) {}
}

interface Account {
  bytes: number;
  /** The user's records still counted, oldest first. */
  readonly records: Set<BudgetedRecord>;
}

/**
 * The bytes this process keeps for resumable runs, by run and by user, and which record to drop when
 * one more entry would pass a bound:
 *
 * - past the run's own bound, that run's record is dropped (the run goes on, unrecorded);
 * - past its user's bound, one of that user's own records: the oldest that has ended, else the oldest;
 * - past the total, one record of the user holding the most bytes, chosen the same way; the writer's
 *   own user is counted with the bytes it is adding, and wins a tie.
 *
 * So one user can never hold more than the user bound, and their runs can only push out records of
 * users who would still hold more than they do: filling the process to wipe another user's records
 * takes at least as many bytes per user as that user keeps, from as many users as it takes to reach
 * the total.
 */
export class RecordBudget {
  private total = 0;
  private readonly accounts = new Map<string, Account>();

  constructor(private readonly bounds: RecordBounds) {}

  /** The bytes kept now (tests and diagnostics). */
  get bytes(): number {
    return this.total;
  }

  /** The bytes kept now for `user`'s runs. */
  bytesOf(user: string): number {
    return this.accounts.get(user)?.bytes ?? 0;
  }

  /** Count a new record of `user`; `onDrop` forgets its entries if a bound drops it. */
  open(user: string, onDrop: () => void): BudgetedRecord {
    const record = new BudgetedRecord(user, onDrop);
    let account = this.accounts.get(user);
    if (!account) this.accounts.set(user, (account = { bytes: 0, records: new Set() }));
    account.records.add(record);
    return record;
  }

  /**
   * Make room for `bytes` more of `record`, dropping records as the bounds say: true when the entry
   * may be kept, false when `record` is dropped (now or before).
   */
  charge(record: BudgetedRecord, bytes: number): boolean {
    if (record.gone) return false;
    const { maxRunBytes, maxUserBytes, maxTotalBytes } = this.bounds;
    if (record.bytes + bytes > maxRunBytes) {
      this.drop(record);
      return false;
    }
    const account = this.accounts.get(record.user)!;
    while (account.bytes + bytes > maxUserBytes) {
      this.drop(victimOf(account, record));
      if (record.gone) return false;
    }
    while (this.total + bytes > maxTotalBytes) {
      this.drop(victimOf(this.heaviest(account, bytes), record));
      if (record.gone) return false;
    }
    record.bytes += bytes;
    account.bytes += bytes;
    this.total += bytes;
    return true;
  }

  /** The record's run ended: it goes before its user's running records when room is needed. */
  ended(record: BudgetedRecord): void {
    record.ended = true;
  }

  /** The record expired: its bytes are free. */
  release(record: BudgetedRecord): void {
    this.forget(record);
  }

  private drop(record: BudgetedRecord): void {
    if (!this.forget(record)) return;
    record.dropped = true;
    record.onDrop();
  }

  private forget(record: BudgetedRecord): boolean {
    if (record.gone) return false;
    record.gone = true;
    const account = this.accounts.get(record.user)!;
    account.bytes -= record.bytes;
    this.total -= record.bytes;
    record.bytes = 0;
    account.records.delete(record);
    if (account.records.size === 0) this.accounts.delete(record.user);
    return true;
  }

  /** The account holding the most bytes, `own` counted with the `adding` bytes it asks for; `own` on a tie. */
  private heaviest(own: Account, adding: number): Account {
    let heaviest = own;
    let most = own.bytes + adding;
    for (const account of this.accounts.values()) {
      if (account.bytes > most) {
        heaviest = account;
        most = account.bytes;
      }
    }
    return heaviest;
  }
}

/** The record of `account` to drop: its oldest ended record holding bytes, else its oldest holding bytes, else `writer`'s own. */
function victimOf(account: Account, writer: BudgetedRecord): BudgetedRecord {
  let oldest: BudgetedRecord | undefined;
  for (const record of account.records) {
    if (record.bytes === 0) continue;
    if (record.ended) return record;
    oldest ??= record;
  }
  return oldest ?? writer;
}
