/**
 * The admin plane's zod schemas: request bodies the handlers validate
 * (workers/routes/admin.ts, workers/routes/faults.ts), path parameters, and
 * the answers GET /openapi.json describes. The tunables' PATCH body is
 * generated from core/tunable-specs.ts, whose rules core/tunables.ts applies.
 */
import { z } from "zod";
import { MEMBER_ID } from "../../core/members";
import { LOCATION_HINTS } from "../../core/placement";
import type { Result } from "../../core/errors";
import type { ClusterStatus } from "../../core/status";
import { SPECS, type TunableSpec } from "../../core/tunable-specs";
import type { TunableDescription } from "../../core/tunables";
import type { VerifyReport } from "../../core/verify";
import type { MasterAdmin } from "../../durable-objects/master/admin";
import type { MasterFaults } from "../../durable-objects/master/faults";
import { clusterParams } from "./data";

export const memberParams = clusterParams.extend({
  id: z.string().regex(MEMBER_ID).describe("A member: node-0, replica-1, ..."),
});

const probability = z.number().min(0).max(1).default(0);

/** Test-only relay message faults; `{}` (every probability 0) heals. */
export const messageFaultsSchema = z
  .strictObject({
    seed: z.number().int().min(0).max(0xffffffff).default(0),
    drop: probability,
    delay: probability,
    delayMs: z.number().int().min(0).max(10_000).default(50),
    duplicate: probability,
    reorder: probability,
  })
  .meta({ id: "MessageFaults" });

/** A new replica may name where it should live (a Durable Object location hint). */
export const addReplicaSchema = z.strictObject({
  location: z
    .enum(LOCATION_HINTS, {
      error: `expected a location hint: one of ${LOCATION_HINTS.join(", ")}`,
    })
    .optional(),
});

export const delaySchema = z.strictObject({ ms: z.number().int().min(0).max(60_000) });
export const crashSchema = z.strictObject({ midBatch: z.boolean().default(false) });
export const tamperSchema = z.strictObject({ sql: z.string().min(1).max(10_000) });
export const rewindSchema = z.strictObject({ lsn: z.number().int().min(0) });
export const partitionSchema = z.object({ partitioned: z.boolean() }).strict();

export const promoteSchema = z
  .object({
    replica: z.string().regex(MEMBER_ID, "expected a member id such as replica-2").optional(),
    force: z.boolean().optional(),
  })
  .strict();

function tunableSchema(spec: TunableSpec): z.ZodType {
  if (spec.type === "bool") return z.boolean().describe(spec.description);
  if (spec.type === "enum") {
    return z.enum(spec.values as [string, ...string[]]).describe(spec.description);
  }
  const number = spec.type === "int" ? z.number().int() : z.number();
  return number.min(spec.min).max(spec.max).describe(spec.description);
}

/** Any subset of the tunables, each within its bounds; all or nothing. */
export const tunablesPatch = z
  .strictObject(
    Object.fromEntries(
      Object.entries(SPECS).map(([name, spec]) => [name, tunableSchema(spec).optional()]),
    ),
  )
  .meta({ id: "TunablesPatch" });

const tunableValue = z.union([z.boolean(), z.number(), z.string()]);

export const tunablesList = z
  .record(
    z.string(),
    z.object({
      value: tunableValue,
      default: tunableValue,
      type: z.enum(["bool", "int", "float", "enum"]),
      min: z.number().nullable(),
      max: z.number().nullable(),
      values: z.array(z.string()).optional(),
      description: z.string(),
    }),
  )
  .meta({ id: "Tunables" });

const location = z.enum(LOCATION_HINTS).nullable();

/** The main fields; docs/operations.md, "Status", describes every one. */
export const clusterStatus = z
  .looseObject({
    cluster: z.string(),
    master: z.looseObject({
      id: z.string(),
      location: location.optional(),
      lsn: z.number().int(),
      term: z.number().int(),
      epoch: z.number().int(),
      writersBusy: z.number().int(),
      writersQueued: z.number().int(),
      waiter: z.looseObject({
        outstanding: z.number().int(),
        handedOff: z.number().int(),
        inlineWaits: z.object({
          off: z.number().int(),
          queueFull: z.number().int(),
          notPlain: z.number().int(),
        }),
      }),
      idle: z.object({
        asleep: z.boolean(),
        quietMs: z.number().int(),
        awakeBecause: z.string().nullable(),
        sleeps: z.number().int(),
        wakes: z.number().int(),
      }),
    }),
    replicas: z.array(
      z.looseObject({
        id: z.string(),
        state: z.enum(["coherent", "incoherent", "catching-up"]),
        incoherentReason: z.string().nullable(),
        location: location.optional(),
        ackedLsn: z.number().int(),
        lagMs: z.number(),
        bytesBehind: z.number().int(),
        avgAckMs: z.number(),
        lastAckAt: z.number().nullable(),
      }),
    ),
  })
  .meta({ id: "ClusterStatus" });

export const verifyResult = z
  .looseObject({
    agree: z.boolean(),
    lsn: z.number().int(),
    nodes: z.array(z.looseObject({ node: z.string() })),
    mismatches: z.array(z.string()),
  })
  .meta({ id: "VerifyResult" });

const sanctioned = z.array(z.string()).describe("The sanctioned replicas, after the change.");

export const replicaList = z.object({
  replicas: z.array(z.string()),
  locations: z.record(z.string(), location),
});

/** POST …/replicas: the new replica, its hint, and the replicas after it joined. */
export const addedReplica = z
  .object({
    id: z.string().regex(MEMBER_ID).describe("The new replica's id (never reused)."),
    location: location.describe("Its location hint; null: none."),
    replicas: sanctioned,
  })
  .meta({ id: "AddedReplica" });

/** DELETE …/replicas/{id}: the replica removed, and the replicas left. */
export const removedReplica = z
  .object({ id: z.string().regex(MEMBER_ID), replicas: sanctioned })
  .meta({ id: "RemovedReplica" });

export const deleteClusterQuery = z.object({
  confirm: z
    .string()
    .describe("The cluster's name again: without it, or with another name, nothing is deleted."),
});

export const deletedCluster = z
  .object({
    cluster: z.string(),
    members: z
      .array(z.string())
      .describe("Every member whose object was emptied, the master first."),
  })
  .meta({ id: "DeletedCluster" });

export const promoted = z.object({
  master: z.string().describe("The new master."),
  term: z.number().int().describe("Its term."),
});

/** What each fault route answers: what changed, as the master or the member reports it. */
const member = z.string().regex(MEMBER_ID);
export const faultAnswers = {
  crashed: z.object({ crashed: z.literal(true) }),
  messages: z.object({ messages: messageFaultsSchema }),
  delayed: z.object({ id: member, delayMs: z.number().int() }),
  replicaCrashed: z.object({ id: member, midBatch: z.boolean() }),
  tampered: z.object({ id: member, tampered: z.literal(true) }),
  rewound: z.object({ id: member }),
  link: z.object({ id: member, disconnected: z.boolean() }),
  stopped: z.object({ id: member, stopped: z.boolean() }),
  lost: z.object({ lost: member.describe("The member that was master.") }),
  restored: z.object({ restored: member }),
  partitioned: z.object({ id: member, partitioned: z.boolean() }),
};

/** A type without the index signatures loose objects add, arrays read-only. */
type Known<T> = T extends readonly (infer E)[]
  ? readonly Known<E>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : K]: Known<T[K]> }
    : T;
/** True when every value of type A is one the schema describes: the fields it names cannot drift. */
type Described<A, Schema> = [A] extends [Known<Schema>] ? true : false;
const described = <T extends true>(): T | undefined => undefined;
described<Described<ClusterStatus, z.infer<typeof clusterStatus>>>();
described<Described<VerifyReport, z.infer<typeof verifyResult>>>();
described<Described<TunableDescription, z.infer<typeof tunablesList>[string]>>();
/** What a master's admin or fault call returns when it succeeds. */
type Answer<Call> = Call extends (...args: never[]) => Promise<Result<infer T>> ? T : never;
described<Described<Answer<MasterAdmin["addReplica"]>, z.infer<typeof addedReplica>>>();
described<Described<Answer<MasterAdmin["removeReplica"]>, z.infer<typeof removedReplica>>>();
described<Described<Answer<MasterFaults["crash"]>, z.infer<typeof faultAnswers.crashed>>>();
described<
  Described<Answer<MasterFaults["setMessageFaults"]>, z.infer<typeof faultAnswers.messages>>
>();
described<
  Described<Answer<MasterFaults["setReplicaDelay"]>, z.infer<typeof faultAnswers.delayed>>
>();
described<
  Described<Answer<MasterFaults["crashReplica"]>, z.infer<typeof faultAnswers.replicaCrashed>>
>();
described<
  Described<Answer<MasterFaults["tamperReplica"]>, z.infer<typeof faultAnswers.tampered>>
>();
described<Described<Answer<MasterFaults["rewindRelay"]>, z.infer<typeof faultAnswers.rewound>>>();
described<
  Described<Answer<MasterFaults["setReplicaDisconnected"]>, z.infer<typeof faultAnswers.link>>
>();
described<
  Described<Answer<MasterFaults["setReplicaStopped"]>, z.infer<typeof faultAnswers.stopped>>
>();
