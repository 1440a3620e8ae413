/**
 * One scheduler for every timed job of the master: waiter deadlines,
 * heartbeats, relay restarts, pruning. Jobs are named; a name has at most one
 * due time. The owner keeps one in-memory timer at the earliest due time (exact
 * timing) and one DO alarm near it (the durable backstop that wakes an evicted
 * object); `due` hands back what is due and `next` says when to wake next.
 */
export class Scheduler {
  private readonly jobs = new Map<string, number>();

  get size(): number {
    return this.jobs.size;
  }

  /** Schedules `name` at `at`, replacing any earlier plan for it. */
  at(name: string, at: number): void {
    this.jobs.set(name, at);
  }

  /** Schedules `name` at `at` unless it is already due sooner. */
  atLatest(name: string, at: number): void {
    const current = this.jobs.get(name);
    if (current === undefined || at < current) this.jobs.set(name, at);
  }

  cancel(name: string): void {
    this.jobs.delete(name);
  }

  clear(): void {
    this.jobs.clear();
  }

  has(name: string): boolean {
    return this.jobs.has(name);
  }

  /** Removes and returns the jobs due at `now`, earliest first. */
  due(now: number): string[] {
    const ready = [...this.jobs].filter(([, at]) => at <= now).sort((a, b) => a[1] - b[1]);
    for (const [name] of ready) this.jobs.delete(name);
    return ready.map(([name]) => name);
  }

  /** The earliest due time, or null when nothing is scheduled. */
  next(): number | null {
    let earliest: number | null = null;
    for (const at of this.jobs.values()) if (earliest === null || at < earliest) earliest = at;
    return earliest;
  }
}
