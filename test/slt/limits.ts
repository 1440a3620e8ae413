/**
 * The refusals a conformance run accepts as skips: each is a limit the docs
 * promise, matched by error code and message (and, where the message is a
 * generic one, by the statement too). Any other refusal is a failure, so a new
 * kind of refusal cannot hide in a run until it is documented and listed here.
 * test/slt-limits.test.ts checks that each cited doc says what is cited.
 */

export interface DocReference {
  readonly file: "docs/security.md" | "docs/determinism.md";
  /** The heading of the section that documents the limit. */
  readonly section: string;
  /** Text that section contains, word for word. */
  readonly mentions: string;
}

export interface DocumentedLimit {
  /** Short name for the summary. */
  readonly id: string;
  readonly code: string;
  readonly message: RegExp;
  /** For messages that more than one limit shares: the statements this limit is about. */
  readonly sql?: RegExp;
  readonly doc: DocReference;
}

export interface Refusal {
  readonly code: string;
  readonly message: string;
}

const OTHER_REFUSALS = "Other refusals";

export const DOCUMENTED_LIMITS: readonly DocumentedLimit[] = [
  {
    id: "compound-select-terms",
    code: "INVALID_SQL",
    message: /^too many terms in compound SELECT\b/,
    doc: { file: "docs/security.md", section: "Limits", mentions: "terms in a compound `SELECT`" },
  },
  {
    id: "expression-depth",
    code: "INVALID_SQL",
    message: /^Expression tree is too large \(maximum depth \d+\)/,
    doc: { file: "docs/security.md", section: "Limits", mentions: "expression depth" },
  },
  {
    id: "result-columns",
    code: "INVALID_SQL",
    message: /^too many columns in result set\b/,
    doc: { file: "docs/security.md", section: "Limits", mentions: "result columns" },
  },
  {
    id: "like-pattern",
    code: "INVALID_SQL",
    message: /^LIKE or GLOB pattern too complex\b/,
    doc: { file: "docs/security.md", section: "Limits", mentions: "`LIKE` pattern length" },
  },
  {
    id: "result-rows",
    code: "PAYLOAD_TOO_LARGE",
    message: /^the result has more than [\d,]+ rows\b/,
    doc: { file: "docs/security.md", section: "Limits", mentions: "rows in one result" },
  },
  {
    // The platform's authorizer answers a bare "not authorized", whatever it
    // refuses; only a TEMP object is a documented reason for it.
    id: "temp-schema",
    code: "INVALID_SQL",
    message: /^not authorized: SQLITE_AUTH$/,
    sql: /^\s*CREATE\s+TEMP(?:ORARY)?\s/i,
    doc: { file: "docs/determinism.md", section: OTHER_REFUSALS, mentions: "`CREATE TEMP`" },
  },
  {
    id: "platform-functions",
    code: "INVALID_SQL",
    message: /^not authorized\b/,
    sql: /\b(?:load_extension|sqlite_version|pragma_[a-z_]+)\b/i,
    doc: { file: "docs/security.md", section: "Internal state", mentions: "`sqlite_version()`" },
  },
  {
    id: "statement-kind",
    code: "INVALID_SQL",
    message:
      /^(?:BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA|ATTACH|DETACH|VACUUM|ANALYZE|REINDEX) statements are not allowed\b/,
    doc: { file: "docs/determinism.md", section: OTHER_REFUSALS, mentions: "`SAVEPOINT`" },
  },
  {
    id: "one-statement-per-sql",
    code: "INVALID_SQL",
    message: /^one statement per entry\b/,
    doc: {
      file: "docs/determinism.md",
      section: OTHER_REFUSALS,
      mentions: "One statement per `sql` string",
    },
  },
  {
    id: "reserved-name",
    code: "RESERVED_NAME",
    message: /is an internal name and cannot be used$/,
    doc: { file: "docs/determinism.md", section: OTHER_REFUSALS, mentions: "`RESERVED_NAME`" },
  },
  {
    id: "non-deterministic",
    code: "NON_DETERMINISTIC",
    message: /\bis not allowed\b/,
    doc: {
      file: "docs/determinism.md",
      section: "How each kind of statement travels",
      mentions: "`NON_DETERMINISTIC`",
    },
  },
];

/** The documented limit behind a refusal of this SQL, if there is one. */
export function documentedLimit(sql: string, refusal: Refusal): DocumentedLimit | undefined {
  return DOCUMENTED_LIMITS.find(
    (limit) =>
      limit.code === refusal.code &&
      limit.message.test(refusal.message) &&
      (limit.sql === undefined || limit.sql.test(sql)),
  );
}
