import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import type { V1Pod, V1Probe } from "@kubernetes/client-node";
import { AnsweringChecks, dialsOf } from "./answering.js";

const started = (port: number, probe: V1Probe, extra: { ready?: boolean; uid?: string } = {}): V1Pod => ({
  metadata: { name: "rt-abc", uid: extra.uid ?? "uid-1", labels: { "tenantry.dev/runtime": "rt" } },
  spec: {
    containers: [{ name: "app", ports: [{ name: "http", containerPort: port }], readinessProbe: probe }],
  },
  status: {
    podIP: "127.0.0.1",
    conditions: [{ type: "Ready", status: extra.ready ? "True" : "False" }],
    containerStatuses: [
      {
        name: "app",
        image: "x",
        imageID: "",
        ready: !!extra.ready,
        restartCount: 0,
        containerID: "process://1",
        state: { running: {} },
      },
    ],
  },
});

describe("the controller's own readiness probes", () => {
  const servers: Server[] = [];
  after(() => {
    for (const server of servers) server.close();
  });

  /** A port nothing listens on yet, and a function that starts a server there answering `status`. */
  async function laterServer(status: number) {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const open = async () => {
      const server = createServer((req, res) => {
        res.statusCode = req.url === "/ready" ? status : 404;
        res.end();
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    };
    return { port, open };
  }

  it("runs httpGet and tcpSocket probes by named or numbered port; not exec probes", () => {
    const pod = started(8080, { httpGet: { path: "ready", port: "http" as never } });
    assert.deepEqual(dialsOf(pod), [{ port: 8080, http: { path: "/ready", https: false, headers: {} } }]);
    assert.deepEqual(dialsOf(started(9090, { tcpSocket: { port: 9090 as never } })), [{ port: 9090 }]);
    assert.equal(dialsOf(started(1, { exec: { command: ["true"] } })), undefined);
    assert.equal(dialsOf(started(1, { httpGet: { port: "nope" as never } })), undefined);
  });

  it("notices a started pod's server once it answers, and calls back for it", async () => {
    const { port, open } = await laterServer(200);
    const pod = started(port, { httpGet: { path: "/ready", port: port as never } });
    let calledBack!: (pod: V1Pod) => void;
    const answered = new Promise<V1Pod>((resolve) => {
      calledBack = resolve;
    });
    const checks = new AnsweringChecks(calledBack);
    assert.equal(checks.answered(pod, 60_000), false, "nothing listens yet");
    await open();
    assert.equal(await answered, pod);
    assert.equal(checks.answered(pod, 60_000), true);
    // Once the kubelet says Ready its word counts: the answer is forgotten.
    assert.equal(
      checks.answered(
        started(port, { httpGet: { path: "/ready", port: port as never } }, { ready: true }),
        60_000,
      ),
      false,
    );
    checks.stop();
  });

  it("does not count an answer the probe refuses (HTTP 500)", async () => {
    const { port, open } = await laterServer(500);
    await open();
    const pod = started(port, { httpGet: { path: "/ready", port: port as never } }, { uid: "uid-2" });
    const checks = new AnsweringChecks(() => assert.fail("a 500 is not ready"));
    checks.answered(pod, 60_000);
    // The refusal is seen by the server at least twice: the probe ran and was refused.
    let asked = 0;
    await new Promise<void>((resolve) =>
      servers.at(-1)!.on("request", () => {
        if (++asked === 2) resolve();
      }),
    );
    assert.equal(checks.answered(pod, 60_000), false);
    checks.stop();
  });
});
