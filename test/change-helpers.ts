/** The change stream's JSON page, as tests read it. */
import { call } from "./helpers";

export interface Event {
  lsn: number;
  term: number;
  ts: number;
  changes: { table: string; op: string; key: unknown; oldKey?: unknown; row?: unknown }[];
  statements: { sql: string; params?: unknown[] }[];
}

export interface Page {
  events: Event[];
  next: number;
  acknowledged: number;
}

/** GET .../changes?format=json&<query>. */
export const page = (c: string, query: string) =>
  call<Page>("GET", `/v1/clusters/${c}/changes?format=json&${query}`);
