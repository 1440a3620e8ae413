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

/** One Server-Sent Events block: its fields by name, and its comment lines. */
export interface SseBlock {
  fields: Record<string, string>;
  comments: string[];
}

/** The SSE blocks complete in `text`, and what is left of it for the next chunk. */
export function sseBlocks(text: string): { blocks: SseBlock[]; rest: string } {
  const blocks: SseBlock[] = [];
  let rest = text;
  for (let at = rest.indexOf("\n\n"); at >= 0; at = rest.indexOf("\n\n")) {
    const block: SseBlock = { fields: {}, comments: [] };
    for (const line of rest.slice(0, at).split("\n")) {
      if (line.startsWith(":")) block.comments.push(line);
      const colon = line.indexOf(":");
      if (colon > 0) block.fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
    }
    blocks.push(block);
    rest = rest.slice(at + 2);
  }
  return { blocks, rest };
}
