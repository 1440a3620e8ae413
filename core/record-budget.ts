/**
 * The bytes one request may put in its log record (log_record_max_bytes). A
 * record travels to each replica in one call, which the platform caps (32 MiB),
 * and is held whole in memory on the way: a 250-byte INSERT ... SELECT
 * randomblob() can ask for gigabytes. Changes are counted as they are read
 * from the capture buffer, so the request is refused before it holds more
 * than the limit, and the transaction rolls back.
 */
import { ApiError } from "./errors";

export class RecordBudget {
  private used = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.used;
  }

  /** Counts `bytes` more; throws 413 once past the limit. */
  add(bytes: number): void {
    this.used += bytes;
    if (this.used > this.maxBytes) throw tooLarge(this.maxBytes, `more than ${this.maxBytes}`);
  }

  /** The encoded record's size, checked once more (parameters and counters included). */
  check(recordBytes: number): void {
    if (recordBytes > this.maxBytes) throw tooLarge(this.maxBytes, String(recordBytes));
  }
}

function tooLarge(maxBytes: number, size: string): ApiError {
  return new ApiError(
    "PAYLOAD_TOO_LARGE",
    `the request changes ${size} bytes of rows, over log_record_max_bytes (${maxBytes}): ` +
      "split it into smaller requests",
    { maxBytes },
  );
}
