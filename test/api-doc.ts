/**
 * What docs/api.md promises, read from its text so a test against it fails
 * when the doc and the code drift apart: the routes it names and the error
 * table's statuses and codes.
 */

export interface DocRoute {
  method: string;
  path: string;
  /** The "## " section that names it. */
  section: string;
}

const METHOD = /^(GET|POST|PATCH|PUT|DELETE)\s+(\/\S*)$/;
const ADMIN_PREFIX = "/admin/clusters/{cluster}";

/**
 * Every route the doc names in backticks, with its section: `POST /v1/...` in
 * full; `.../x/y` for a path under the admin prefix; and `/start` right after
 * "and" for the route before it with its last segment replaced (the doc's
 * "`.../stop` and `/start`"). A short form takes the method of the route
 * before it in its section. Query strings are dropped; fenced examples are
 * skipped, since their backticks would pair with the prose's.
 */
export function docRoutes(markdown: string): DocRoute[] {
  const routes: DocRoute[] = [];
  const prose = markdown.replace(/```[\s\S]*?```/g, "");
  for (const part of prose.split(/^## /m).slice(1)) {
    const section = part.slice(0, part.indexOf("\n")).trim();
    let last: DocRoute | undefined;
    let lastEnd = 0;
    for (const match of part.matchAll(/`([^`]+)`/g)) {
      const text = (match[1] ?? "").replace(/\s+/g, " ").trim();
      const between = part.slice(lastEnd, match.index).trim();
      let route: DocRoute | undefined;
      const full = METHOD.exec(text);
      if (full !== null) {
        route = { method: full[1] ?? "", path: (full[2] ?? "").split("?")[0] ?? "", section };
      } else if (last !== undefined && /^\.\.\.\/[\w{}/]+$/.test(text)) {
        route = { method: last.method, path: `${ADMIN_PREFIX}${text.slice(3)}`, section };
      } else if (last !== undefined && between === "and" && /^\/[a-z]+$/.test(text)) {
        route = { method: last.method, path: last.path.replace(/\/[^/]+$/, text), section };
      }
      if (route === undefined) continue;
      routes.push(route);
      last = route;
      lastEnd = (match.index ?? 0) + match[0].length;
    }
  }
  const seen = new Set<string>();
  return routes.filter((r) => {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The rows of the "## Errors" table: each status with the codes it lists. */
export function docErrors(markdown: string): { status: number; code: string }[] {
  const section = markdown.slice(markdown.indexOf("## Errors"), markdown.indexOf("## Data plane"));
  const out: { status: number; code: string }[] = [];
  for (const line of section.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    const status = Number(cells[1]);
    if (!Number.isInteger(status) || status < 100) continue;
    for (const code of (cells[2] ?? "").matchAll(/`([A-Z_]+)`/g)) {
      out.push({ status, code: code[1] ?? "" });
    }
  }
  return out;
}
