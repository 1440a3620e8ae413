/**
 * One SQLite value with its storage class. The runner formats results from
 * these, the way sqllogictest formats what sqlite3_column_*() return, so an
 * executor's job is to say exactly which value SQLite produced.
 */
export type SqlValue =
  | { readonly type: "null" }
  | { readonly type: "integer"; readonly value: bigint }
  | { readonly type: "real"; readonly value: number }
  | { readonly type: "text"; readonly value: string }
  | { readonly type: "blob"; readonly value: Uint8Array };

export const sqlNull: SqlValue = { type: "null" };
export const sqlInteger = (value: bigint): SqlValue => ({ type: "integer", value });
export const sqlReal = (value: number): SqlValue => ({ type: "real", value });
export const sqlText = (value: string): SqlValue => ({ type: "text", value });
export const sqlBlob = (value: Uint8Array): SqlValue => ({ type: "blob", value });
