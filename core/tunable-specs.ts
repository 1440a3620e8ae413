/**
 * Every knob the admin API exposes: its type, default, bounds and meaning
 * (docs/operations.md's table is generated from it). core/tunables.ts
 * validates patches against it.
 */
export type TunableSpec =
  | { type: "bool"; default: boolean; description: string; replicas?: true }
  | { type: "enum"; default: string; values: readonly string[]; description: string }
  | {
      type: "int" | "float";
      default: number;
      min: number;
      max: number;
      description: string;
      replicas?: true;
    };

export const SPECS = {
  sync_mode: {
    type: "enum",
    default: "full",
    values: ["full", "quorum", "none"],
    description:
      "full: answer after every coherent replica acked (strong reads from replicas). quorum: after sync_quorum replicas acked; replicas serve no strong reads. none: after the local commit only; an acked write may be missing on every replica.",
  },
  sync_quorum: {
    type: "int",
    default: 1,
    min: 1,
    max: 64,
    description:
      "With sync_mode quorum: replicas that must ack a commit (fewer if fewer are coherent).",
  },
  async_dist_commit: {
    type: "bool",
    default: true,
    description:
      "Hand plain full-sync commits to the waiter so the writer slot is freed while acks travel.",
  },
  async_dist_commit_max_outstanding: {
    type: "int",
    default: 1024,
    min: 1,
    max: 100_000,
    description: "Most commits the waiter holds at once; a commit that does not fit waits inline.",
  },
  writer_concurrency: {
    type: "int",
    default: 8,
    min: 1,
    max: 1024,
    description: "Most commits executing or waiting inline at once (Comdb2's block processors).",
  },
  rep_timeout_ms: {
    type: "int",
    default: 5000,
    min: 10,
    max: 600_000,
    description:
      "How long a commit waits for a replica's ack before that replica is marked incoherent.",
  },
  coherency_lease_ms: {
    type: "int",
    default: 500,
    min: 10,
    max: 60_000,
    description: "Length of the read lease granted to a coherent replica with every message.",
  },
  master_failover_ms: {
    type: "int",
    default: 0,
    min: 0,
    max: 600_000,
    replicas: true,
    description:
      "Automatic promotion: when no replica of a majority has heard from the master for this long, one of them promotes the most up-to-date member without it (needs durable_lsns). 0 turns it off.",
  },
  lease_guard_ms: {
    type: "int",
    default: 5,
    min: 0,
    max: 10_000,
    replicas: true,
    description:
      "Clock guard band: a replica stops serving strong reads this long before its lease ends (lease instants are on the master's clock), so a replica clock this far behind the master's is still safe. Keep it well under coherency_lease_ms.",
  },
  coherency_rejoin_penalty_ms: {
    type: "int",
    default: 10_000,
    min: 0,
    max: 600_000,
    description:
      "A replica marked incoherent may rejoin the wait sets no sooner than this after it was marked, so a flapping node does not thrash them (Comdb2's downgrade penalty).",
  },
  heartbeat_ms: {
    type: "int",
    default: 200,
    min: 5,
    max: 60_000,
    description:
      "A relay that has sent nothing for this long sends a batch if one can go, else a heartbeat (renewing leases); at most one heartbeat is in flight per replica.",
  },
  logput_window_bytes: {
    type: "int",
    default: 4_000_000,
    min: 0,
    max: 1_000_000_000,
    description:
      "An incoherent replica further behind than this gets no live records and pulls the log; 0 turns it off.",
  },
  log_retain_records: {
    type: "int",
    default: 10_000,
    min: 0,
    max: 10_000_000,
    description:
      "Log records kept even after every replica acked them (the tail a briefly stopped replica catches up from).",
  },
  log_max_records: {
    type: "int",
    default: 100_000,
    min: 100,
    max: 100_000_000,
    description:
      "Most log records kept at all: past this, records are truncated even if a replica lacks them, and that replica is rebuilt from a snapshot. Bounds the master's storage.",
  },
  slow_replica_factor: {
    type: "float",
    default: 2.0,
    min: 0,
    max: 100,
    description:
      "A replica whose average ack time exceeds factor x the second-worst is marked incoherent; 0 turns the check off.",
  },
  durable_lsns: {
    type: "bool",
    default: true,
    description:
      "Answer NOT_DURABLE when a commit is acked by fewer than a majority of the sanctioned nodes (master included) at its deadline: an acknowledged write is on a majority, which a promotion without the master relies on.",
  },
  commit_timeout_ms: {
    type: "int",
    default: 30_000,
    min: 100,
    max: 3_600_000,
    description:
      "A written commit not answered within this is answered 504 COMMIT_TIMEOUT; retry with the same Idempotency-Key.",
  },
  idempotency_retention_ms: {
    type: "int",
    default: 86_400_000,
    min: 1000,
    max: 30 * 86_400_000,
    description: "How long the result of a request with an Idempotency-Key is kept for replays.",
  },
  relay_window: {
    type: "int",
    default: 32,
    min: 1,
    max: 64,
    description:
      "Batches sent and not yet acked per replica; what accumulates while the window is full goes out as the next batch.",
  },
  relay_calls_in_flight: {
    type: "int",
    default: 1,
    min: 1,
    max: 64,
    description:
      "Append calls in flight per replica (heartbeats and held-ack fetches aside). Fewer calls carry larger batches: each call costs every replica a transaction and the runtime a round of RPC, so one call batches everything that committed while the last was out.",
  },
  relay_call_gap_ms: {
    type: "int",
    default: 0,
    min: 0,
    max: 10_000,
    description:
      "With more than one call in flight allowed: a further batch call goes out only once the newest one has been out this long and every round trip of the last second took as long (0: whenever calls in flight allow). Over a slow link calls then overlap, a batch every gap, instead of every record waiting for the call before; over a fast one the call out comes back first and carries everything.",
  },
  relay_batch_max_records: {
    type: "int",
    default: 512,
    min: 1,
    max: 10_000,
    description: "Most log records in one batch to a replica.",
  },
  log_record_max_bytes: {
    type: "int",
    default: 8_000_000,
    min: 65_536,
    max: 16_000_000,
    description:
      "Largest log record one request may write (the rows it changed, as exact images); a larger one is refused 413 PAYLOAD_TOO_LARGE and rolls back. A record goes to a replica in one call, which the platform caps at 32 MiB (text can take two bytes a character there).",
  },
  relay_batch_max_bytes: {
    type: "int",
    default: 2_000_000,
    min: 1024,
    max: 16_000_000,
    description:
      "Most bytes of log records in one batch to a replica (a larger record goes alone).",
  },
  replicate_statement_min_rows: {
    type: "int",
    default: 1000,
    min: 0,
    max: 100_000_000,
    description:
      "A write that changes at least this many rows and calls only deterministic functions ships as its statement, which replicas run and must reproduce exactly (effects digest), instead of as its rows; 0 ships every write as rows.",
  },
  log_tail_bytes: {
    type: "int",
    default: 16_777_216,
    min: 0,
    max: 1_073_741_824,
    description:
      "Most bytes of recent log records the master keeps in memory for live sends; older ones are read from storage.",
  },
  waiter_max_held_bytes: {
    type: "int",
    default: 67_108_864,
    min: 1_048_576,
    max: 1_073_741_824,
    description:
      "Most bytes of responses the waiter holds for handed-off commits and replays; a commit past it waits inline, a replay past it is answered 503 UNAVAILABLE.",
  },
  idle_after_ms: {
    type: "int",
    default: 30_000,
    min: 0,
    max: 86_400_000,
    description:
      "Scale to zero: once the master has had no write, strong read or lease request for this long and nothing is left to send or truncate, it stops heartbeats and timed jobs and clears its alarm, so the platform may evict every node; the next request wakes it. Replicas ask the master for a lease when a strong read finds none. 0 keeps it awake; with master_failover_ms on it never sleeps.",
  },
  debug_ack_delay_ms: {
    type: "int",
    default: 0,
    min: 0,
    max: 60_000,
    replicas: true,
    description: "Test only: replicas delay every ack (not the apply) by this long.",
  },
  debug_apply_delay_ms: {
    type: "int",
    default: 0,
    min: 0,
    max: 60_000,
    replicas: true,
    description: "Test only: replicas sleep this long per message before applying it.",
  },
  debug_link_delay_ms: {
    type: "int",
    default: 0,
    min: 0,
    max: 60_000,
    description:
      "Test only: every call the master's relays make to a replica takes this long to come back, half each way, in order; the replica does what it would (a link of this round trip).",
  },
  debug_fault_injection: {
    type: "bool",
    default: false,
    description:
      "Test only: allow the fault routes (crash the master or a replica, stop, slow or cut off replicas, relay message faults).",
  },
} as const satisfies Record<string, TunableSpec>;
