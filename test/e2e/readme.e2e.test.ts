/**
 * The README's curl examples, run as printed (only the port changes) against a
 * real `wrangler dev`: each must answer 2xx with the documented shape.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";

function readmeCurlCommands(): string[] {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const start = readme.indexOf("```sh\n# Create a table");
  if (start < 0) throw new Error("README has no curl example block");
  const block = readme.slice(start + "```sh\n".length, readme.indexOf("```", start + 6));
  const commands: string[] = [];
  let current = "";
  for (const line of block.split("\n")) {
    if (current === "" && (line.startsWith("#") || line.trim() === "")) continue;
    current += line.endsWith("\\") ? `${line.slice(0, -1)} ` : line;
    if (!line.endsWith("\\")) {
      commands.push(current);
      current = "";
    }
  }
  return commands;
}

function run(command: string, port: number): { status: number; body: string } {
  const local = command.replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`);
  const output = execFileSync("bash", ["-c", `${local} -w '\\n%{http_code}'`], {
    encoding: "utf8",
  });
  const cut = output.lastIndexOf("\n");
  return { status: Number(output.slice(cut + 1)), body: output.slice(0, cut) };
}

describe("README examples against `wrangler dev` (cluster main, 4 replicas)", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("every curl example works as printed", () => {
    const commands = readmeCurlCommands();
    expect(commands.length).toBeGreaterThanOrEqual(9);
    const results = commands.map((command) => ({ command, ...run(command, server.port) }));
    for (const { command, status, body } of results) {
      expect(status, `${command}\n${body}`).toBeGreaterThanOrEqual(200);
      expect(status, `${command}\n${body}`).toBeLessThan(300);
    }
    const json = (i: number) => JSON.parse(results[i]?.body ?? "null");
    expect(json(0)).toMatchObject({ lsn: 1 });
    expect(json(1)).toMatchObject({
      lsn: 2,
      results: [{ rowsWritten: 1, lastRowId: 1 }],
      bookmark: "b1.2",
    });
    expect(json(2)).toMatchObject({ lsn: 3 });
    expect(json(3)).toMatchObject({
      rows: [
        { k: "a", v: "1" },
        { k: "b", v: "2" },
        { k: "hello", v: "world" },
      ],
      appliedLsn: 3,
    });
    expect(json(4).replicas).toHaveLength(4);
    expect(json(5).rep_timeout_ms.value).toBe(2000);
    expect(json(6).rep_timeout_ms.value).toBe(2000);
    expect(json(7)).toMatchObject({ agree: true, lsn: 3 });
    expect(results[8]?.body).toContain('dosql_commits_total{cluster="main"} 3');
    // The write example is retry-safe: sending it again replays the saved result.
    const again = run(commands[1] ?? "", server.port);
    expect(JSON.parse(again.body)).toMatchObject({ lsn: 2, replayed: true });
  });
});
