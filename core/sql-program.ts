/**
 * What a statement does, read from the program SQLite compiled for it
 * (`EXPLAIN <statement>`: one row per VDBE instruction, trigger and foreign-key
 * subprograms listed after the main program). This is SQLite's own answer to
 * "what does it read, write and call", so no reading of the SQL text can be
 * fooled into a different one.
 */

/** One row of EXPLAIN: addr, opcode, p1, p2, p3, p4, p5, comment. */
export type ExplainRow = readonly unknown[];

export interface ProgramFacts {
  /** A write transaction is opened (Transaction with p2 != 0). */
  writes: boolean;
  /** The schema changes (CREATE, DROP, ALTER). */
  changesSchema: boolean;
  /** Root pages of the b-trees the main program opens for reading and for writing. */
  rootsRead: Set<number>;
  rootsWritten: Set<number>;
  /** The same for trigger and foreign-key subprograms. */
  subRootsRead: Set<number>;
  subRootsWritten: Set<number>;
  /** A virtual table is read (VOpen) or written (VUpdate). */
  readsVirtualTable: boolean;
  writesVirtualTable: boolean;
  /**
   * The virtual tables read, as the program names them (`vtab:<address>`, the
   * connection's instance of the table): the same text in every program while
   * the schema stands, so a probe of a known table tells which one it is.
   */
  virtualTablesRead: Set<string>;
  /**
   * The main program sets last_insert_rowid() (an Insert with OPFLAG_LASTROWID,
   * a VUpdate with p1): otherwise the counter still holds whatever the
   * connection inserted last, which differs from node to node.
   */
  setsLastRowId: boolean;
  /** Functions called, by name in lower case (scalar, aggregate and window). */
  functions: Set<string>;
  /** A trigger or foreign-key action runs (Program). */
  runsSubprograms: boolean;
  /** A database other than main (temp, attached) is used. */
  otherDatabase: boolean;
  /** The number of result columns, from the main program's ResultRow. */
  resultColumns: number | null;
  /**
   * A constraint or RAISE may end in ROLLBACK (a Halt or HaltIfNull with p2 =
   * OE_Rollback: OR ROLLBACK, ON CONFLICT ROLLBACK, RAISE(ROLLBACK, …)), which
   * would roll back the runtime's own transaction under the commit.
   */
  mayRollBack: boolean;
}

/** SQLite's OE_Rollback: the conflict resolution that rolls back the whole transaction. */
const OE_ROLLBACK = 1;

const OPEN_READ = new Set(["OpenRead", "ReopenIdx"]);
const OPEN_WRITE = new Set(["OpenWrite"]);
/** Opcodes whose p1 is a root page they change. */
const ROOT_IN_P1 = new Set(["Clear", "Destroy"]);
const CALLS = new Set([
  "Function",
  "PureFunc",
  "AggStep",
  "AggStep1",
  "AggFinal",
  "AggValue",
  "AggInverse",
]);
const SCHEMA_OPCODES = new Set([
  "ParseSchema",
  "SetCookie",
  "CreateBtree",
  "Destroy",
  "DropTable",
  "DropIndex",
  "DropTrigger",
  "VCreate",
  "VDestroy",
  "VRename",
  "RenameColumn",
]);
/**
 * Databases by index: main, and temp. The platform lets no TEMP object be
 * made, so temp's schema table is always empty; ALTER TABLE still reads and
 * rewrites it (for temp triggers naming the table), and opens a transaction on
 * temp to do it. That much is harmless; any other b-tree outside main is not.
 */
const MAIN_DB = 0;
const TEMP_DB = 1;
const SCHEMA_TABLE_ROOT = 1;
/** OPFLAG_LASTROWID: this Insert sets last_insert_rowid(). */
const OPFLAG_LASTROWID = 0x20;
/** OPFLAG_P2ISREG: the root page is in the register p2 names (a b-tree this statement creates). */
const P2_IS_REGISTER = 0x10;

function int(value: unknown): number {
  return typeof value === "number" ? value : Number(value ?? 0);
}

function functionName(p4: unknown): string | null {
  if (typeof p4 !== "string") return null;
  const paren = p4.indexOf("(");
  return (paren < 0 ? p4 : p4.slice(0, paren)).toLowerCase();
}

export function analyzeProgram(rows: readonly ExplainRow[]): ProgramFacts {
  const facts: ProgramFacts = {
    writes: false,
    changesSchema: false,
    rootsRead: new Set(),
    rootsWritten: new Set(),
    subRootsRead: new Set(),
    subRootsWritten: new Set(),
    readsVirtualTable: false,
    writesVirtualTable: false,
    virtualTablesRead: new Set(),
    setsLastRowId: false,
    functions: new Set(),
    runsSubprograms: false,
    otherDatabase: false,
    resultColumns: null,
    mayRollBack: false,
  };
  let main = true;
  rows.forEach((row, index) => {
    const addr = int(row[0]);
    const opcode = String(row[1]);
    const [p1, p2, p3] = [int(row[2]), int(row[3]), int(row[4])];
    const p5 = int(row[6]);
    // A subprogram's listing starts again at address 0.
    if (index > 0 && addr === 0) main = false;
    if (opcode === "Transaction") {
      if (p1 !== MAIN_DB && p1 !== TEMP_DB) facts.otherDatabase = true;
      if (p2 !== 0) facts.writes = true;
    } else if (OPEN_READ.has(opcode) || OPEN_WRITE.has(opcode)) {
      if (p3 !== MAIN_DB && !(p3 === TEMP_DB && p2 === SCHEMA_TABLE_ROOT)) {
        facts.otherDatabase = true;
      }
      if ((p5 & P2_IS_REGISTER) === 0) {
        const write = OPEN_WRITE.has(opcode);
        if (main) (write ? facts.rootsWritten : facts.rootsRead).add(p2);
        else (write ? facts.subRootsWritten : facts.subRootsRead).add(p2);
      }
    } else if (ROOT_IN_P1.has(opcode)) {
      (main ? facts.rootsWritten : facts.subRootsWritten).add(p1);
    } else if (opcode === "VOpen") {
      facts.readsVirtualTable = true;
      facts.virtualTablesRead.add(String(row[5]));
    } else if (opcode === "VUpdate") {
      facts.writesVirtualTable = true;
      if (main && p1 !== 0) facts.setsLastRowId = true;
    } else if (CALLS.has(opcode)) {
      const name = functionName(row[5]);
      if (name !== null) facts.functions.add(name);
    } else if (opcode === "Program") {
      facts.runsSubprograms = true;
    } else if (opcode === "ResultRow" && main && facts.resultColumns === null) {
      facts.resultColumns = p2;
    }
    if ((opcode === "Halt" || opcode === "HaltIfNull") && p2 === OE_ROLLBACK) {
      facts.mayRollBack = true;
    }
    if (SCHEMA_OPCODES.has(opcode)) facts.changesSchema = true;
    if (opcode === "Insert" && main && (p5 & OPFLAG_LASTROWID) !== 0) facts.setsLastRowId = true;
    if (opcode === "CreateBtree" && p1 !== MAIN_DB) facts.otherDatabase = true;
  });
  return facts;
}

/**
 * Functions whose result depends only on their arguments (and on the data
 * they read): a statement that calls nothing else computes the same on every
 * node. SQLite's built-ins with SQLITE_DETERMINISTIC, JSON, math, window and
 * fts5 auxiliary functions. Anything not listed counts as non-deterministic.
 */
export const DETERMINISTIC_FUNCTIONS: ReadonlySet<string> = new Set(
  (
    "abs char coalesce concat concat_ws format glob hex ifnull iif if instr length like " +
    "likelihood likely lower ltrim max min nullif octet_length printf quote replace round " +
    "rtrim sign soundex substr substring trim typeof unhex unicode unistr unistr_quote " +
    "unlikely upper zeroblob " +
    "avg count group_concat string_agg sum total median percentile percentile_cont " +
    "percentile_disc " +
    "row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value " +
    "last_value nth_value " +
    "json jsonb json_array jsonb_array json_array_length json_error_position json_extract " +
    "jsonb_extract -> ->> json_insert jsonb_insert json_object jsonb_object json_patch " +
    "jsonb_patch json_pretty json_remove jsonb_remove json_replace jsonb_replace json_set " +
    "jsonb_set json_type json_valid json_quote json_group_array jsonb_group_array " +
    "json_group_object jsonb_group_object " +
    "acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln " +
    "log log10 log2 mod pi pow power radians sin sinh sqrt tan tanh trunc " +
    "bm25 highlight snippet fts5_get_locale fts5_locale"
  ).split(" "),
);

export function nonDeterministicCalls(facts: ProgramFacts): string[] {
  return [...facts.functions].filter((name) => !DETERMINISTIC_FUNCTIONS.has(name)).sort();
}
