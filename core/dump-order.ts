/**
 * The order an export loads tables in. Durable Object SQLite enforces foreign
 * keys on every statement (`PRAGMA foreign_keys = OFF` does nothing there), so
 * an import into a cluster must insert a parent's rows before the rows that
 * name them: each table comes after the tables its foreign keys name, and
 * otherwise in the order SQLite lists them. Tables in a cycle (each naming the
 * other) cannot all come first; they keep SQLite's order, and their rows load
 * only if each row's parent comes before it (docs/operations.md).
 */
import { asciiLower } from "./sql-lexer";

export interface Dependent {
  name: string;
  /** Tables its foreign keys name (a table may name itself, or a table that does not exist). */
  parents: readonly string[];
}

export function loadOrder<T extends Dependent>(tables: readonly T[]): T[] {
  const known = new Set(tables.map((t) => asciiLower(t.name)));
  const placed = new Set<string>();
  const remaining = [...tables];
  const out: T[] = [];
  while (remaining.length > 0) {
    const ready = remaining.findIndex((table) =>
      table.parents.every((parent) => {
        const name = asciiLower(parent);
        return name === asciiLower(table.name) || !known.has(name) || placed.has(name);
      }),
    );
    // No table is ready: a cycle. The first one left goes next.
    const [next] = remaining.splice(Math.max(ready, 0), 1);
    if (next === undefined) break;
    placed.add(asciiLower(next.name));
    out.push(next);
  }
  return out;
}
