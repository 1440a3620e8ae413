/**
 * Verify's verdict: every replica at the master's LSN with the master's schema
 * and table checksums. Anything else is a mismatch that says which node and how.
 */
import type { NodeChecksums } from "./protocol";

export type NodeReport = NodeChecksums | { node: string; error: string };

export interface VerifyReport {
  agree: boolean;
  lsn: number;
  nodes: NodeReport[];
  mismatches: string[];
}

export function compareChecksums(
  master: NodeChecksums,
  replicas: readonly NodeReport[],
): VerifyReport {
  const lsn = master.appliedLsn;
  const mismatches: string[] = [];
  for (const node of replicas) {
    if ("error" in node) {
      mismatches.push(`${node.node}: unreachable (${node.error})`);
      continue;
    }
    if (node.appliedLsn !== lsn) {
      mismatches.push(`${node.node}: at LSN ${node.appliedLsn}, master at ${lsn}`);
      continue;
    }
    if (node.schema !== master.schema) mismatches.push(`${node.node}: schema differs`);
    const names = new Set([...Object.keys(master.tables), ...Object.keys(node.tables)]);
    for (const name of [...names].sort()) {
      const a = master.tables[name];
      const b = node.tables[name];
      if (a?.checksum !== b?.checksum || a?.rows !== b?.rows) {
        mismatches.push(`${node.node}: table ${name} differs`);
      }
    }
  }
  return { agree: mismatches.length === 0, lsn, nodes: [master, ...replicas], mismatches };
}
