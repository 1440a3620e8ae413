/**
 * The data plane of one cluster (docs/api.md, "Data plane"): exec, the rows
 * route and query, with the admin plane beside it as `client.admin`.
 *
 * Every write carries an Idempotency-Key, generated unless the caller names
 * one, and keeps it on every retry: the server runs a key's request once and
 * answers a retry from the saved result ("replayed": true), so a write whose
 * answer was lost can be sent again without writing twice. The client keeps
 * the highest bookmark its writes returned, and a "bookmark" read sends it,
 * so the client reads its own writes from any replica.
 */
import { AdminClient } from "./admin.ts";
import { laterBookmark } from "./bookmarks.ts";
import { type CallOptions, Requester, type RequesterOptions } from "./requester.ts";
import type {
  Consistency,
  ExecResult,
  QueryResult,
  ResultFormat,
  StatementInput,
} from "./types.ts";
import { encodeValue, type SqlParam } from "./values.ts";

export interface ClientOptions extends RequesterOptions {
  /** The front door, e.g. http://127.0.0.1:8787 (`npm start`). */
  url: string;
  /** Default "main". */
  cluster?: string;
  /** DATA_TOKEN (or ADMIN_TOKEN, which data routes accept too). */
  token?: string;
  /** ADMIN_TOKEN, for `admin` and /metrics; the data token is tried if absent. */
  adminToken?: string;
  /**
   * A bookmark from earlier (another client, a previous request of the same
   * user), so the first "bookmark" read already sees those writes; ignored if
   * this client cannot read it.
   */
  bookmark?: string;
  /** Makes each write's Idempotency-Key (default crypto.randomUUID()). */
  newIdempotencyKey?: () => string;
}

export interface ExecOptions extends CallOptions {
  /** The key of this write, if the caller keeps its own (1-128 printable ASCII). */
  idempotencyKey?: string;
  /** "arrays": rows a statement returns (RETURNING) come as `columns` plus arrays. */
  format?: ResultFormat;
}

export interface QueryOptions<F extends ResultFormat = "objects"> extends CallOptions {
  /** Default "strong". "bookmark" reads this client's writes (see `bookmark`). */
  consistency?: Consistency;
  /** For "bookmark": this bookmark instead of the highest this client holds. */
  bookmark?: string;
  /** Pin the read to one member ("replica-2", or "master"); it never falls back. */
  replica?: string;
  format?: F;
}

export class DosqliteClient {
  readonly cluster: string;
  readonly admin: AdminClient;
  private readonly requester: Requester;
  private readonly token: string | undefined;
  private readonly newKey: () => string;
  private highest: string | undefined;

  constructor(options: ClientOptions) {
    this.cluster = options.cluster ?? "main";
    this.requester = new Requester(options);
    this.token = options.token ?? options.adminToken;
    this.newKey = options.newIdempotencyKey ?? (() => crypto.randomUUID());
    this.highest = laterBookmark(undefined, options.bookmark);
    this.admin = new AdminClient(this.requester, this.cluster, options.adminToken ?? options.token);
  }

  /** The highest bookmark this client's writes returned (or it was given); undefined before any. */
  get bookmark(): string | undefined {
    return this.highest;
  }

  /**
   * Takes in a bookmark from elsewhere; the highest one is kept, and one this
   * client cannot read ("", a truncated cookie) is ignored.
   */
  noteBookmark(bookmark: string): void {
    this.highest = laterBookmark(this.highest, bookmark);
  }

  private get base(): string {
    return `/v1/clusters/${encodeURIComponent(this.cluster)}`;
  }

  /** One write transaction: every statement commits, or none does. */
  async exec(
    statements: readonly StatementInput[],
    options: ExecOptions = {},
  ): Promise<ExecResult> {
    const body = {
      statements: statements.map((s) => ({
        sql: s.sql,
        params: (s.params ?? []).map(encodeValue),
      })),
      ...(options.format === undefined ? {} : { format: options.format }),
    };
    return this.write(`${this.base}/exec`, body, options);
  }

  /** exec of one statement. */
  execute(sql: string, params: readonly SqlParam[] = [], options: ExecOptions = {}) {
    return this.exec([{ sql, params }], options);
  }

  /** Inserts rows into `table` in one transaction, without writing SQL. */
  async insertRows(
    table: string,
    rows: readonly Record<string, SqlParam>[],
    options: Omit<ExecOptions, "format"> = {},
  ): Promise<ExecResult> {
    const body = {
      rows: rows.map((row) =>
        Object.fromEntries(Object.entries(row).map(([column, v]) => [column, encodeValue(v)])),
      ),
    };
    return this.write(`${this.base}/tables/${encodeURIComponent(table)}/rows`, body, options);
  }

  private async write(path: string, body: unknown, options: ExecOptions): Promise<ExecResult> {
    // Made once, before the first attempt: every retry must carry the same key.
    const key = options.idempotencyKey ?? this.newKey();
    const result = await this.requester.run<ExecResult>(
      {
        method: "POST",
        path,
        token: this.token,
        body,
        headers: { "idempotency-key": key },
        answer: "json",
        idempotent: true,
        idempotencyKey: key,
      },
      options,
    );
    this.noteBookmark(result.bookmark);
    return result;
  }

  /**
   * A read. "bookmark" sends `options.bookmark` or the highest this client
   * holds; a client with neither has no write of its own to wait for, so the
   * read goes as "any" (the server refuses "bookmark" without one).
   */
  async query<F extends ResultFormat = "objects">(
    sql: string,
    params: readonly SqlParam[] = [],
    options: QueryOptions<F> = {},
  ): Promise<QueryResult<F>> {
    let consistency = options.consistency;
    const bookmark = consistency === "bookmark" ? (options.bookmark ?? this.highest) : undefined;
    if (consistency === "bookmark" && bookmark === undefined) consistency = "any";
    const body = {
      sql,
      params: params.map(encodeValue),
      ...(consistency === undefined ? {} : { consistency }),
      ...(bookmark === undefined ? {} : { bookmark }),
      ...(options.replica === undefined ? {} : { replica: options.replica }),
      ...(options.format === undefined ? {} : { format: options.format }),
    };
    return this.requester.run<QueryResult<F>>(
      {
        method: "POST",
        path: `${this.base}/query`,
        token: this.token,
        body,
        answer: "json",
        idempotent: true,
      },
      options,
    );
  }
}
