/**
 * A scripted stand-in for fetch, for the client's unit tests: each call takes
 * the next answer from the script (a status and body, or an error to throw)
 * and is recorded with its method, path, headers and body. Waits are recorded
 * instead of slept, so tests see each delay the client chose without taking it.
 */
import { DosqliteClient, type ClientOptions } from "../client/index.ts";

export type Answer =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { throws: Error };

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

export interface Fake {
  client: DosqliteClient;
  sent: Sent[];
  /** Every wait the client asked for, in ms. */
  waits: number[];
}

export const error = (
  status: number,
  code: string,
  headers: Record<string, string> = {},
  details: Record<string, unknown> = {},
): Answer => ({
  status,
  body: { error: { code, message: `${code} (scripted)`, ...details } },
  headers,
});

export const ok = (body: unknown): Answer => ({ status: 200, body });

export const written = (lsn: number, bookmark = `b1.${lsn.toString(36)}`): Answer =>
  ok({ lsn, results: [{ rowsWritten: 1, lastRowId: lsn }], bookmark });

export function fakeClient(script: Answer[], options: Partial<ClientOptions> = {}): Fake {
  const sent: Sent[] = [];
  const waits: number[] = [];
  let clock = 0;
  const fetch = async (input: string, init: RequestInit): Promise<Response> => {
    const url = new URL(input);
    sent.push({
      method: init.method ?? "GET",
      path: `${url.pathname}${url.search}`,
      headers: { ...(init.headers as Record<string, string>) },
      body: typeof init.body === "string" ? JSON.parse(init.body) : undefined,
    });
    const answer = script.shift();
    if (answer === undefined) throw new Error(`unscripted call ${init.method} ${url.pathname}`);
    if ("throws" in answer) throw answer.throws;
    const text = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body ?? {});
    return new Response(text, { status: answer.status, headers: answer.headers ?? {} });
  };
  const client = new DosqliteClient({
    url: "http://cluster.test",
    token: "data",
    adminToken: "admin",
    fetch,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
    },
    now: () => clock,
    random: () => 0.5,
    ...options,
  });
  return { client, sent, waits };
}
