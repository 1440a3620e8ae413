/**
 * Where the Worker's one thread spends its time under load, from a V8 CPU
 * profile (the inspector's Profiler domain): self time by function and by
 * source module, and inclusive time by function. Functions are named with the
 * module they come from, read from the bundle's `// path.ts` comments
 * (esbuild writes one before each module), since the bench bundle ships
 * without its source map. Pure: a profile and the bundle's text in, rows out.
 */

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  /** Microseconds since the previous sample. */
  timeDeltas: number[];
}

export interface ProfileRow {
  name: string;
  /** Share of all sampled time, 0 to 1. */
  share: number;
}

export interface ProfileSummary {
  /** Sampled wall time, ms. */
  totalMs: number;
  /** Share the thread was idle (V8's `(idle)` node). */
  idle: number;
  /** Share under any function whose name matches `exclude`: left out of the rows. */
  excluded: number;
  self: ProfileRow[];
  modules: ProfileRow[];
  inclusive: ProfileRow[];
}

/** The source module of every line of an esbuild bundle (`?` before the first). */
export function modulesByLine(bundle: string): string[] {
  const out: string[] = [];
  let current = "?";
  bundle.split("\n").forEach((line, i) => {
    const marker = /^\/\/ ([\w./@-]+\.[cm]?[jt]s)$/.exec(line);
    if (marker?.[1] !== undefined) current = marker[1];
    out[i] = current;
  });
  return out;
}

function sortedRows(totals: Map<string, number>, all: number, limit: number): ProfileRow[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, t]) => ({ name, share: all === 0 ? 0 : t / all }));
}

/**
 * `exclude`: samples under a function of this name (as `name [module]`) are
 * counted apart, e.g. the tables a benchmark creates before it loads them.
 * `window`: only samples taken within these microseconds since the profile
 * began count at all (the load's measured seconds, without its set-up).
 */
export function summarize(
  profile: CpuProfile,
  bundle: string,
  options: { limit?: number; exclude?: RegExp; window?: { fromUs: number; toUs: number } } = {},
): ProfileSummary {
  const limit = options.limit ?? 40;
  const lines = modulesByLine(bundle);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n: ProfileNode): string => {
    const { functionName, url, lineNumber } = n.callFrame;
    const module = url.endsWith(".js") && url.includes("worker") ? lines[lineNumber] : url;
    return `${functionName || "(anonymous)"} [${module || "native"}]`;
  };
  const selfTime = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    const window = options.window;
    if (window !== undefined && (at < window.fromUs || at > window.toUs)) return;
    selfTime.set(id, (selfTime.get(id) ?? 0) + delta);
  });
  let total = 0;
  let idle = 0;
  let excluded = 0;
  const self = new Map<string, number>();
  const modules = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, t] of selfTime) {
    total += t;
    const node = byId.get(id);
    if (node === undefined) continue;
    if (node.callFrame.functionName === "(idle)") idle += t;
    const stack: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at);
      if (frame !== undefined) stack.push(label(frame));
    }
    if (options.exclude !== undefined && stack.some((name) => options.exclude?.test(name))) {
      excluded += t;
      continue;
    }
    const name = label(node);
    self.set(name, (self.get(name) ?? 0) + t);
    const module = name.slice(name.lastIndexOf("[") + 1, -1);
    modules.set(module, (modules.get(module) ?? 0) + t);
    // A recursive function counts once per sample.
    for (const frame of new Set(stack)) inclusive.set(frame, (inclusive.get(frame) ?? 0) + t);
  }
  return {
    totalMs: total / 1000,
    idle: total === 0 ? 0 : idle / total,
    excluded: total === 0 ? 0 : excluded / total,
    self: sortedRows(self, total, limit),
    modules: sortedRows(modules, total, limit),
    inclusive: sortedRows(inclusive, total, limit),
  };
}
