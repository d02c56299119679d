/**
 * Upgraded connections through the gateway: kubectl exec, port-forward (WebSocket and SPDY) and
 * logs reach the API server as the impersonated caller. The simulated nodes serve no kubelet API,
 * so past authorization the API server fails to reach the node, going direct and through the
 * gateway alike; what matters is that both answers are the same for each user. A WebSocket watch
 * shows a whole upgrade (101 and streamed frames) through the gateway.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { request } from "node:https";
import type { Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { type KubectlResult, kubectl } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  core,
  createTenant,
  deleteTenants,
  gatewayKubeconfig,
  startTestGateway,
  type TestGateway,
  waitForNamespaces,
} from "./support.js";

/** kubectl with extra environment, stopped after `ms` (port-forward runs until stopped). */
function kubectlFor(kubeconfig: string, args: string[], env: Record<string, string>, ms: number) {
  return new Promise<KubectlResult>((resolve, reject) => {
    const child = spawn("kubectl", ["--kubeconfig", kubeconfig, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => child.kill(), ms);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/** The error kubectl printed, with what differs between two runs (ports, addresses, times) taken out. */
function normalized(result: KubectlResult): string {
  return result.stderr
    .split("\n")
    .filter((line) => /error|forbidden|Error/i.test(line))
    .map((line) =>
      line
        .replace(/^E\d{4} [\d:.]+\s+\d+ \S+\] /, "")
        .replace(/127\.0\.0\.1:\d+/g, "ADDR")
        .replace(/https:\/\/[^/\s"]+/g, "URL"),
    )
    .join("\n")
    .trim();
}

describe("tenant gateway: exec, port-forward and logs", () => {
  const a = uniqueName("upa");
  const namespace = `${a}-apps`;
  let owner: TestUser;
  let viewer: TestUser;
  let gw: TestGateway;

  before(async () => {
    [owner, viewer] = await Promise.all([testUser(uniqueName("alice")), testUser(uniqueName("val"))]);
    await createTenant(a, {
      owners: [{ kind: "User", name: owner.name }],
      users: [{ name: viewer.name, role: "view" }],
      namespaces: [{ name: "apps" }],
    });
    gw = await startTestGateway();
    await waitForNamespaces(gw.informers, [namespace]);
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: "app" },
        spec: { containers: [{ name: "app", image: "busybox", command: ["sleep", "3600"] }] },
      },
    });
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: "app", namespace });
        assert.equal(pod.status?.phase, "Running");
      },
      { timeoutMs: 60_000 },
    );
  });

  after(async () => {
    await gw?.stop();
    await deleteTenants([a]);
  });

  const cases: { name: string; args: string[]; env?: Record<string, string>; ms?: number }[] = [
    { name: "exec over WebSocket", args: ["exec", "app", "--", "echo", "hi"] },
    {
      name: "exec over SPDY",
      args: ["exec", "app", "--", "echo", "hi"],
      env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false" },
    },
    { name: "port-forward over WebSocket", args: ["port-forward", "pod/app", "0:80"], ms: 4000 },
    {
      name: "port-forward over SPDY",
      args: ["port-forward", "pod/app", "0:80"],
      env: { KUBECTL_PORT_FORWARD_WEBSOCKETS: "false" },
      ms: 4000,
    },
    { name: "logs", args: ["logs", "app"] },
    { name: "logs -f", args: ["logs", "-f", "app"] },
  ];

  for (const { name, args, env, ms } of cases) {
    test(`${name}: the same answer through the gateway as direct, for a user with and without the right`, async () => {
      for (const user of [owner, viewer]) {
        const direct = await kubectlFor(
          user.kubeconfigPath,
          ["-n", namespace, ...args],
          env ?? {},
          ms ?? 20_000,
        );
        const through = await kubectlFor(
          gatewayKubeconfig(gw.gateway, user),
          ["-n", namespace, ...args],
          env ?? {},
          ms ?? 20_000,
        );
        assert.notEqual(normalized(direct), "", `${user.name} direct: ${direct.stderr}`);
        assert.equal(normalized(through), normalized(direct), `${user.name}: ${through.stderr}`);
      }
    });
  }

  test("the answers say who asked: the viewer is forbidden to exec, the owner reaches the node", async () => {
    const viewerExec = await kubectl(gatewayKubeconfig(gw.gateway, viewer), [
      "-n",
      namespace,
      "exec",
      "app",
      "--",
      "true",
    ]);
    assert.match(
      viewerExec.stderr,
      new RegExp(`User "${viewer.name}" cannot (create|get) resource "pods/exec"`),
    );
    const ownerExec = await kubectl(gatewayKubeconfig(gw.gateway, owner), [
      "-n",
      namespace,
      "exec",
      "app",
      "--",
      "true",
    ]);
    assert.doesNotMatch(ownerExec.stderr, /forbidden/i);
    assert.match(ownerExec.stderr, /10250|dial|backend/);
  });

  test("a WebSocket watch is upgraded and streams events through the gateway", async () => {
    const url = new URL(gw.gateway.url);
    const user = owner.kubeConfig.getCurrentUser()!;
    const frames = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request({
        host: url.hostname,
        port: Number(url.port),
        path: `/api/v1/namespaces/${namespace}/pods?watch=1`,
        ca: gw.gateway.caPem,
        cert: Buffer.from(user.certData!, "base64"),
        key: Buffer.from(user.keyData!, "base64"),
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-protocol": "v4.channel.k8s.io",
          // The API server's WebSocket handshake requires an Origin.
          origin: "http://localhost",
        },
      });
      req.on("upgrade", (res, socket: Socket, head: Buffer) => {
        let text = head.toString("latin1");
        const done = () => {
          socket.destroy();
          resolve({ status: res.statusCode ?? 0, text });
        };
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString("latin1");
          if (text.includes('"type":"ADDED"')) done();
        });
        setTimeout(done, 5000);
      });
      req.on("response", (res) => resolve({ status: res.statusCode ?? 0, text: "" }));
      req.on("error", reject);
      req.end();
    });
    assert.equal(frames.status, 101);
    assert.match(frames.text, /"type":"ADDED".*"name":"app"/);
  });
});
