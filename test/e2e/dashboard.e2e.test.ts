/**
 * The dashboard (GET /admin/ui) in headless Chromium against a real
 * `wrangler dev`: the page shows nothing of the cluster before it has the
 * admin token, refuses a wrong one, then shows the topology with every
 * replica coherent; a replica stopped through the fault route turns
 * incoherent on screen, with its reason, and coherent again once started.
 *
 * It needs a Chromium: CHROMIUM_PATH, else /usr/bin/chromium (Debian:
 * `apt-get install -y chromium`; .ci/run installs it). Without one it fails
 * and says so, unless DASHBOARD_E2E=skip. SCREENSHOT=docs/images/dashboard.png
 * saves the page while the replica is incoherent (the picture in
 * docs/operations.md, "The dashboard").
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DosqliteClient } from "../../client/index.ts";
import { type DevServer, startDevServer } from "./dev-server";

const ADMIN = "dev-admin-token";
const STOPPED = "replica-2";
/** Long enough for a stopped replica to be marked and a started one to rejoin, well inside a minute. */
const SCREEN_MS = 20_000;
/** Where to save a picture of the page (docs/images/dashboard.png); unset, none is taken. */
const SCREENSHOT = process.env.SCREENSHOT ?? "";

function findChromium(): string | null {
  const named = process.env.CHROMIUM_PATH;
  if (named !== undefined && named !== "") return existsSync(named) ? named : null;
  return ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p)) ?? null;
}

const executablePath = findChromium();
const skip = executablePath === null && process.env.DASHBOARD_E2E === "skip";
const NO_BROWSER =
  "The dashboard test needs a Chromium and found none " +
  `(CHROMIUM_PATH=${process.env.CHROMIUM_PATH ?? "unset"}, /usr/bin/chromium). ` +
  "Install Debian's: `apt-get install -y chromium` (what .ci/run does), or point " +
  "CHROMIUM_PATH at a Chromium or Chrome binary; DASHBOARD_E2E=skip skips this file instead.";

describe.skipIf(skip)("the dashboard in Chromium against `wrangler dev`", () => {
  let server: DevServer;
  let browser: Browser;
  let page: Page;
  let client: DosqliteClient;
  /** What the page asked of the Worker, and what it logged as an error. */
  const requests: string[] = [];
  const problems: string[] = [];
  let writing = true;
  let writes: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    if (executablePath === null) throw new Error(NO_BROWSER);
    [server, browser] = await Promise.all([
      startDevServer(),
      // Root in a container has no user namespace for Chromium's sandbox.
      chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] }),
    ]);
    client = new DosqliteClient({ url: server.url, token: "dev-data-token", adminToken: ADMIN });
    await client.admin.patchTunables({
      debug_fault_injection: true,
      // A stopped replica is marked after 1 s rather than 5, and may rejoin 1 s after.
      rep_timeout_ms: 1000,
      coherency_rejoin_penalty_ms: 1000,
      // Only the stopped replica may leave the wait sets: none is marked slow on a busy machine.
      slow_replica_factor: 0,
    });
    await client.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)");
    // A steady trickle of commits, so the rates and sparklines have something to show.
    writes = (async () => {
      for (let i = 0; writing; i++) {
        await client.execute("INSERT INTO kv (v) VALUES (?)", [`v${i}`]).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 40));
      }
    })();
    page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    page.on("request", (request) => requests.push(new URL(request.url()).pathname));
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      // A refused or failed poll is logged as a failed load; the page shows it and goes on
      // (this test asks for 401s). Anything else, a file that did not load or a policy
      // violation, is a fault.
      const poll = /\/admin\/clusters\/|\/metrics\?/.test(message.location().url);
      if (message.type() === "error" && !poll) problems.push(`console: ${message.text()}`);
    });
  });

  afterAll(async () => {
    writing = false;
    await writes;
    await browser?.close();
    await server?.stop();
  });

  /** The on-screen row of a replica: its state and reason as the page shows them. */
  const row = (id: string) => page.locator(`#replicas tbody tr[data-replica="${id}"]`);
  const cell = (id: string, field: string) => row(id).locator(`[data-field="${field}"]`);
  const eventually = <T>(read: () => Promise<T>) =>
    expect.poll(read, { timeout: SCREEN_MS, interval: 100 });

  it("shows no cluster data and calls no admin route before it has the token", async () => {
    await page.goto(`${server.url}/admin/ui`);
    await eventually(() => page.locator("#token").isVisible()).toBe(true);
    expect(await page.locator("#cluster-view").isHidden()).toBe(true);
    expect(await page.locator("#cluster").inputValue()).toBe("main");
    const text = await page.locator("body").textContent();
    expect(text ?? "").not.toMatch(/replica-\d|node-\d/);
    await page.waitForTimeout(1200); // a poll's worth: none must start
    expect(requests.filter((p) => p.startsWith("/admin/clusters") || p === "/metrics")).toEqual([]);
  });

  it("refuses a wrong token and keeps nothing of it", async () => {
    await page.fill("#token", "not-the-admin-token");
    await page.press("#token", "Enter");
    await eventually(() => page.locator("#login-error").textContent()).toContain(
      "The admin token was refused.",
    );
    expect(await page.evaluate(() => Object.keys(sessionStorage))).not.toContain(
      "dosql.adminToken",
    );
    expect(await page.locator("#cluster-view").isHidden()).toBe(true);
  });

  it("with the admin token, shows the topology, the term and every replica coherent", async () => {
    await page.fill("#token", ADMIN);
    await page.press("#token", "Enter");
    await eventually(() => row("replica-1").count()).toBe(1);
    await eventually(() => page.locator('#replicas tbody tr[data-state="coherent"]').count()).toBe(
      4,
    );
    const topology = page.locator("#topology");
    expect(await topology.locator('[data-field="master"]').textContent()).toBe("node-0");
    expect(await topology.locator('[data-field="term"]').textContent()).toBe("1");
    expect(await topology.locator('[data-field="coherent"]').textContent()).toBe("4 of 4");
    expect(await page.locator("#nodes li").count()).toBe(5);
    // The token went into this tab's sessionStorage, not the address.
    expect(page.url()).not.toContain(ADMIN);
    expect(await page.evaluate(() => sessionStorage.getItem("dosql.adminToken"))).toBe(ADMIN);
    // Commits/s and the p99 get numbers once two polls can be compared.
    await eventually(() =>
      page.locator('[data-chart="commits"] svg path.line').count(),
    ).toBeGreaterThan(0);
    await eventually(async () =>
      Number(await page.locator('[data-chart="p99"] [data-value]').textContent()),
    ).toBeGreaterThan(0);
  });

  it("its routes refuse the browser itself without the bearer header: no cookie stands in", async () => {
    const answers = await page.evaluate(async () => {
      const paths = ["/admin/clusters/main/status", "/metrics?cluster=main"];
      return Promise.all(paths.map(async (p) => (await fetch(p)).status));
    });
    expect(answers).toEqual([401, 401]);
    expect((await page.context().cookies()).length).toBe(0);
  });

  it("shows a stopped replica turn incoherent with its reason, then coherent once started", async () => {
    // For the picture, a healthy stretch first, so the sparklines show the stop against it.
    if (SCREENSHOT !== "") await page.waitForTimeout(12_000);
    const started = Date.now();
    await client.admin.faults.stopReplica(STOPPED);
    await eventually(() => row(STOPPED).getAttribute("data-state")).toBe("incoherent");
    expect(await cell(STOPPED, "state").textContent()).toBe("incoherent");
    expect(await cell(STOPPED, "reason").textContent()).toMatch(/^(unreachable|ack-timeout)$/);
    expect(await page.locator('#topology [data-field="coherent"]').textContent()).toBe("3 of 4");
    const marked = Date.now() - started;
    // Its lag grows on screen while it answers nothing (writes go on meanwhile).
    const lagNow = async () =>
      Number(((await cell(STOPPED, "lagMs").textContent()) ?? "").replace(/,/g, ""));
    await eventually(async () => (await lagNow()) > 1000).toBe(true);
    const before = await lagNow();
    await page.waitForTimeout(1500);
    expect(await lagNow()).toBeGreaterThan(before);

    if (SCREENSHOT !== "") {
      // A few more polls, so the row has fallen behind and the sparklines have a history.
      await page.waitForTimeout(4000);
      const path = resolve(SCREENSHOT);
      mkdirSync(dirname(path), { recursive: true });
      await page.screenshot({ path, fullPage: true });
    }

    await client.admin.faults.startReplica(STOPPED);
    await eventually(() => row(STOPPED).getAttribute("data-state")).toBe("coherent");
    expect(await cell(STOPPED, "reason").textContent()).toBe("");
    expect(await page.locator('#topology [data-field="coherent"]').textContent()).toBe("4 of 4");
    console.log(
      `marked incoherent on screen after ${marked} ms, coherent again after ${Date.now() - started} ms`,
    );
  });

  it("logged no error: the policy let every file load and nothing broke", () => {
    expect(problems).toEqual([]);
  });
});
