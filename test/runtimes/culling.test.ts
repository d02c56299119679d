/**
 * Culling with real runtimes on the process node, without any BackupPolicy: a runtime kept busy
 * through the proxy runs on; idle past its timeout it is stopped, with an Event `Culled` naming
 * its idle time and the stopped runtime saying why; a runtime past its maximum age is stopped
 * however busy; a runtime may ask for less than its service allows, never more. A Jupyter runtime
 * with the runtime agent has its own last activity (Jupyter Server's /api/status) reported without
 * any request through the proxy.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Event } from "@kubernetes/client-node";
import { eventually } from "../support/eventually.js";
import { adminCall } from "../support/runtimes.js";
import {
  echoServiceSpec,
  jupyterServiceSpec,
  ProcessNodeRuntimes,
  type TestUser,
} from "./process-node-support.js";

describe("culling", () => {
  const runtimes = new ProcessNodeRuntimes();
  let user: TestUser;
  let echo: string;

  before(async () => {
    user = await runtimes.user("cull");
    echo = await runtimes.service(
      "cull-echo",
      echoServiceSpec({ idleTimeoutSeconds: 10, maxAgeSeconds: 3600 }),
    );
  });
  after(() => runtimes.cleanUp());

  const culledEvents = async (instance: string): Promise<CoreV1Event[]> => {
    const { namespace, name } = runtimes.placed(user, echo, instance);
    const events = await runtimes.home.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name},reason=Culled`,
    });
    return events.items;
  };

  test("a busy runtime runs on; idle past its timeout it is stopped, with an Event naming its idle time", async () => {
    const started = await runtimes.start(user, echo, "busy");
    const url = started.body.url as string;
    const busyUntil = Date.now() + 50_000;
    while (Date.now() < busyUntil) {
      assert.equal(
        (await fetch(`${url}ping`, { headers: { authorization: `Bearer ${user.token}` } })).status,
        200,
      );
      await sleep(3_000);
    }
    const runtime = await runtimes.read(user, echo, "busy");
    assert.equal(runtime.status?.phase, "Running", "kept busy past its idle timeout, it still runs");
    assert.equal(runtime.spec.desiredState, "Running");
    assert.equal((await culledEvents("busy")).length, 0);
    // Idle now: culled once its last request reached the Runtime and 10 s more went by.
    const stopped = await eventually(
      async () => {
        const r = await runtimes.read(user, echo, "busy");
        assert.equal(r.status?.phase, "Stopped", JSON.stringify(r.status));
        return r;
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    assert.equal(stopped.status?.reason, "Culled");
    assert.match(stopped.status?.message ?? "", /^culled: idle for \d+ s .*its idle timeout is 10 s/);
    const [event] = await culledEvents("busy");
    const idle = Number(/idle for (\d+) s/.exec(event?.message ?? "")?.[1]);
    assert.ok(idle >= 10, event?.message);
    // The next start resumes it as any stopped runtime.
    await runtimes.start(user, echo, "busy");
  });

  test("a runtime past its maximum age is stopped however busy", async () => {
    await runtimes.start(user, echo, "old", { query: "?maxAgeSeconds=15" });
    const url = (await runtimes.read(user, echo, "old")).status?.route?.token;
    assert.ok(url);
    const stopped = await eventually(
      async () => {
        await fetch(
          `${(await adminCall("GET", runtimes.path(user, echo, "old"), user.token)).body.url ?? ""}x`,
          {
            headers: { authorization: `Bearer ${user.token}` },
          },
        ).catch(() => undefined);
        const r = await runtimes.read(user, echo, "old");
        assert.equal(r.status?.phase, "Stopped");
        return r;
      },
      { timeoutMs: 90_000, intervalMs: 2000 },
    );
    assert.match(stopped.status?.message ?? "", /running for \d+ s, its maximum age is 15 s/);
  });

  test("a runtime may ask for less than its service allows, never more", async () => {
    const refused = await adminCall(
      "POST",
      `${runtimes.path(user, echo, "greedy")}?idleTimeoutSeconds=60`,
      user.token,
      {},
    );
    assert.equal(refused.status, 400);
    assert.equal(refused.body.field, "idleTimeoutSeconds");
    assert.equal(refused.body.limit, 10);
    const tooShort = await adminCall(
      "POST",
      `${runtimes.path(user, echo, "greedy")}?maxAgeSeconds=5`,
      user.token,
      {},
    );
    assert.equal(tooShort.status, 400);
    assert.equal(tooShort.body.field, "maxAgeSeconds");
    await assert.rejects(runtimes.read(user, echo, "greedy"), "nothing was created");
  });

  test("a Jupyter runtime's agent reports the server's own last activity, without a request through the proxy", async () => {
    const jupyter = await runtimes.service(
      "cull-lab",
      jupyterServiceSpec({
        agent: { activity: { path: "/api/status", tokenFromEnv: "JUPYTER_TOKEN" }, periodSeconds: 5 },
      }),
    );
    await runtimes.start(user, jupyter, "lab", { timeoutMs: 900_000 });
    const pod = await runtimes.home.core.readNamespacedPod({
      namespace: runtimes.placed(user, jupyter, "lab").namespace,
      name: (await runtimes.read(user, jupyter, "lab")).status!.endpoint!.pod!,
    });
    assert.deepEqual(
      pod.spec?.containers.map((c) => c.name),
      ["notebook", "tenantry-agent"],
    );
    // Activity the proxy never sees (as a kernel's): a request straight to the pod, with Jupyter's token.
    const { namespace, name } = runtimes.placed(user, jupyter, "lab");
    const secret = await runtimes.home.core.readNamespacedSecret({ namespace, name: `${name}-token` });
    const jupyterToken = Buffer.from(secret.data!.token!, "base64").toString();
    const running = await runtimes.read(user, jupyter, "lab");
    const endpoint = running.status!.endpoint!.url;
    // Status times have whole seconds, and activity in the second the runtime started is no news
    // (culling counts from the start anyway): the request comes in a later second.
    const startedSecond = Date.parse(running.status!.startedAt!);
    await sleep(Math.max(0, startedSecond + 1100 - Date.now()));
    const before = Math.floor(Date.now() / 1000) * 1000;
    assert.ok(before > startedSecond);
    const direct = await fetch(`${endpoint}/api/contents`, {
      headers: { authorization: `token ${jupyterToken}` },
    });
    assert.equal(direct.status, 200);
    const agentLog = () =>
      runtimes.home.core.readNamespacedPodLog({
        namespace: pod.metadata!.namespace!,
        name: pod.metadata!.name!,
        container: "tenantry-agent",
      });
    await eventually(
      async () => {
        const r = await runtimes.read(user, jupyter, "lab");
        if (Date.parse(r.status?.lastActivity ?? "0") >= before) return;
        // The agent's log says why (a failed report, an unreadable status) when it never gets there,
        // and what Jupyter's status says to the test's own request.
        const status = await fetch(`${endpoint}/api/status`, {
          headers: { authorization: `token ${jupyterToken}` },
        }).then(
          async (res) => `${res.status} ${(await res.text()).slice(0, 300)}`,
          (err: Error) => err.message,
        );
        assert.fail(
          `the agent did not report Jupyter's own last activity (after ${new Date(before).toISOString()}): ` +
            `the Runtime shows ${r.status?.lastActivity}; ${endpoint}/api/status answers ${status}; ` +
            `the agent logged:\n${await agentLog()}`,
        );
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const log = await agentLog();
    assert.match(log, /runtime agent running/);
    assert.doesNotMatch(log, /report failed|could not be read/);
  });
});
