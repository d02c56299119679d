import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type ActivityAnswer, type AgentState, idlePastTimeout, readActivity, tick } from "./agent.js";

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  body: string;
}

/** A runtime's status endpoint and the Admin API's activity and stop routes, recording what they get. */
function serve(answer: () => ActivityAnswer | number, lastActivity: string | undefined) {
  const seen: Seen[] = [];
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
    if (req.url === "/r/tok/api/status") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ last_activity: lastActivity, kernels: 0 }));
    } else if (req.url === "/services/alice/jupyter/lab/activity") {
      const reply = answer();
      if (typeof reply === "number") res.writeHead(reply).end("refused");
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
    } else if (req.url?.startsWith("/services/alice/jupyter/lab/stop")) {
      res.writeHead(202).end("{}");
    } else res.writeHead(404).end();
  });
  return { server, seen };
}

describe("the runtime agent", () => {
  const tokenFile = join(mkdtempSync(join(tmpdir(), "agent-")), "token");
  let base = "";
  let reply: ActivityAnswer | number = { lastActivity: new Date().toISOString() };
  const { server, seen } = serve(() => reply, "2026-01-01T09:00:00.000Z");
  const settings = () => ({
    tokenFile,
    stopUrl: `${base}/services/alice/jupyter/lab/stop`,
    reportUrl: `${base}/services/alice/jupyter/lab/activity`,
    sourceUrl: `${base}/r/tok/api/status`,
    sourceField: "last_activity",
    sourceToken: "jupyter-secret",
    periodMs: 1000,
  });
  const log = () => {};

  before(async () => {
    writeFileSync(tokenFile, "projected-token\n");
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it("reads the runtime's own activity with its token and reports it with the pod's", async () => {
    seen.length = 0;
    reply = { lastActivity: new Date().toISOString(), idleTimeoutSeconds: 600 };
    assert.equal(await tick(settings(), log), "reported");
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.authorization]),
      [
        ["GET", "/r/tok/api/status", "token jupyter-secret"],
        ["POST", "/services/alice/jupyter/lab/activity", "Bearer projected-token"],
      ],
    );
    assert.deepEqual(JSON.parse(seen[1]!.body), { lastActivity: "2026-01-01T09:00:00.000Z" });
  });

  it("stops its runtime once idle past its timeout and the activity lag, saying how long", async () => {
    seen.length = 0;
    const now = Date.parse("2026-01-01T10:00:00.000Z");
    reply = { lastActivity: "2026-01-01T09:58:00.000Z", idleTimeoutSeconds: 60, activityLagSeconds: 30 };
    assert.equal(await tick(settings(), log, () => now), "stopped");
    const stop = seen.find((s) => s.method === "DELETE")!;
    assert.equal(stop.url, "/services/alice/jupyter/lab/stop?idleSeconds=120");
    assert.equal(stop.authorization, "Bearer projected-token");
  });

  it("leaves a runtime alone that tenantry does not cull for idleness, or that is not idle long enough", () => {
    const now = Date.parse("2026-01-01T10:00:00.000Z");
    assert.equal(idlePastTimeout({ lastActivity: "2026-01-01T09:00:00.000Z" }, now), undefined);
    assert.equal(
      idlePastTimeout(
        { lastActivity: "2026-01-01T09:58:45.000Z", idleTimeoutSeconds: 60, activityLagSeconds: 30 },
        now,
      ),
      undefined,
    );
  });

  it("while its runtime starts, says now and then why it does not answer; once it answered, every time", async () => {
    const lines: string[] = [];
    const record = (message: string, fields: Record<string, unknown> = {}) =>
      lines.push(`${message} ${JSON.stringify(fields)}`);
    const state: AgentState = { answered: false };
    const wrong = { ...settings(), sourceUrl: `${base}/r/wrong/api/status` };
    for (let i = 0; i < 7; i++) assert.equal(await readActivity(wrong, record, state), undefined);
    assert.equal(lines.length, 2, "the first failed read and the seventh");
    assert.match(lines[0]!, /^the runtime has not answered yet .*"status":404/);
    assert.match(lines[1]!, /"reads":7/);
    assert.ok(await readActivity(settings(), record, state));
    assert.equal(state.answered, true);
    await readActivity(wrong, record, state);
    assert.match(lines[2]!, /^the runtime's activity could not be read .*"status":404/);
  });

  it("fails a period the Admin API refuses (the next period tries again)", async () => {
    reply = 403;
    await assert.rejects(tick(settings(), log), /answered 403/);
  });
});
