/**
 * The JupyterHub REST API at /hub/api, through the runtimes proxy, with real runtimes on the
 * process node and real, unmodified clients from PyPI: JupyterHub's own REST example starts a named
 * server, follows its progress until ready, reaches it and stops it; jupyterhub-idle-culler 2.0.0
 * culls an idle runtime with an admin's token narrowed to one user; tokens carry JupyterHub's
 * scopes, and what they do not hold is refused with JupyterHub's status codes.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { RUNTIMES_DELEGATE_CLUSTER_ROLE } from "../../src/runtimes/index.js";
import { testEnvironment } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { hubClients } from "../support/hub-clients.js";
import { removeObject } from "../support/runtimes.js";
import { echoServiceSpec, ProcessNodeRuntimes, type TestUser } from "./process-node-support.js";

const proxy = () => testEnvironment().tenantry.runtimesProxyUrl!;

async function hub(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${proxy()}/hub/api${path}`, {
    method,
    headers: {
      authorization: `token ${token}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function runPython(
  python: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

/** Loads JupyterHub's example unmodified and runs its start_server and stop_server on one named server. */
const EXAMPLE_DRIVER = `
import importlib.util, logging, sys
spec = importlib.util.spec_from_file_location("start_stop_server", sys.argv[1])
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
logging.basicConfig(level=logging.INFO, stream=sys.stdout)
hub_url, user, server, token = sys.argv[2:6]
session = example.make_session(token)
url = example.start_server(session, hub_url, user, server)
r = session.get(f"{url}hello-from-the-example")
r.raise_for_status()
print("SERVED", r.status_code, next(l for l in r.text.splitlines() if "hello-from-the-example" in l))
example.stop_server(session, hub_url, user, server)
print("STOPPED")
`;

describe("the JupyterHub REST API", () => {
  const runtimes = new ProcessNodeRuntimes();
  let alice: TestUser;
  let bob: TestUser;
  let ops: TestUser;
  let echo: string;
  const binding = `hub-ops-${process.pid}`;

  before(async () => {
    [alice, bob, ops] = await Promise.all([
      runtimes.user("hubalice"),
      runtimes.user("hubbob"),
      runtimes.user("hubops"),
    ]);
    echo = await runtimes.service("hub-echo", echoServiceSpec(), { "tenantry.dev/default-profile": "true" });
    // ops is JupyterHub's admin here: the delegation permission.
    await runtimes.home.objects.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: binding },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: RUNTIMES_DELEGATE_CLUSTER_ROLE,
      },
      subjects: [{ kind: "User", name: ops.name, apiGroup: "rbac.authorization.k8s.io" }],
    } as KubernetesObject);
  });
  after(async () => {
    await removeObject(runtimes.home, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: binding },
    });
    await runtimes.cleanUp();
  });

  const issue = async (user: TestUser, scopes: string[], note: string) => {
    const res = await hub("POST", `/users/${user.name}/tokens`, user.token, {
      scopes,
      note,
      expires_in: 3600,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as { token: string; id: string; scopes: string[] };
  };

  test("JupyterHub's own REST example starts a named server, waits for it through its progress, reaches it and stops it", async () => {
    const clients = await hubClients();
    const token = await issue(
      alice,
      [`servers!user=${alice.name}`, `read:users!user=${alice.name}`, `access:servers!user=${alice.name}`],
      "example",
    );
    const run = await runPython(clients.python, [
      "-c",
      EXAMPLE_DRIVER,
      clients.restExample,
      proxy(),
      alice.name,
      "lab",
      token.token,
    ]);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /Progress \d+%/);
    assert.match(run.output, /SERVED 200 .*hello-from-the-example/);
    assert.match(run.output, /STOPPED/);
    const runtime = await runtimes.read(alice, echo, "lab");
    assert.equal(runtime.spec.desiredState, "Stopped");
  });

  test("jupyterhub-idle-culler culls an idle runtime through it", async () => {
    const clients = await hubClients();
    await runtimes.start(alice, echo, "idle");
    // An admin's token for the culler, narrowed to alice: other users' runtimes are not its business.
    const scopes = ["list:users", "read:users:activity", "read:servers", "delete:servers"].map(
      (s) => `${s}!user=${alice.name}`,
    );
    const token = await issue(ops, scopes, "idle culler");
    const listed = await hub("GET", "/users", token.token);
    assert.deepEqual(
      (listed.body as unknown as { name: string }[]).map((u) => u.name),
      [alice.name],
    );
    let culler: ChildProcess | undefined;
    let output = "";
    try {
      culler = spawn(clients.culler, [`--url=${proxy()}/hub/api`, "--timeout=10", "--cull-every=5"], {
        env: { ...process.env, JUPYTERHUB_API_TOKEN: token.token },
        stdio: ["ignore", "pipe", "pipe"],
      });
      culler.stdout!.on("data", (c: Buffer) => (output += c.toString()));
      culler.stderr!.on("data", (c: Buffer) => (output += c.toString()));
      await eventually(
        async () => assert.equal((await runtimes.read(alice, echo, "idle")).status?.phase, "Stopped", output),
        { timeoutMs: 120_000, intervalMs: 1000 },
      );
    } finally {
      if (culler?.pid) process.kill(culler.pid, "SIGTERM");
    }
    assert.match(output, new RegExp(`Culling server ${alice.name}/idle \\(inactive for`));
    // A delegated stop, recorded as one.
    const { namespace, name } = runtimes.placed(alice, echo, "idle");
    const events = await runtimes.home.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name},reason=DelegatedAction`,
    });
    assert.ok(
      events.items.some((e) => e.message?.includes(`${ops.name} did stop on behalf of ${alice.name}`)),
    );
  });

  test("servers: JupyterHub's models and status codes", async () => {
    const own = await hub("POST", `/users/${alice.name}/servers/web`, alice.token, {
      user_options: { profile: echo },
    });
    assert.ok([201, 202].includes(own.status), JSON.stringify(own.body));
    await eventually(
      async () => {
        const user = await hub("GET", `/users/${alice.name}`, alice.token);
        const servers = user.body.servers as Record<
          string,
          { ready: boolean; url: string; pending: string | null; user_options: { profile: string } }
        >;
        assert.equal(servers.web?.ready, true, JSON.stringify(user.body));
        assert.match(servers.web!.url, /^\/r\/[\w-]+\/$/);
        assert.equal(servers.web!.user_options.profile, echo);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    const again = await hub("POST", `/users/${alice.name}/servers/web`, alice.token);
    assert.equal(again.status, 400);
    assert.match(String(again.body.message), /is already running/);
    assert.deepEqual(Object.keys(again.body).sort(), ["message", "status"]);
    const server = await hub("GET", `/users/${alice.name}/servers/web`, alice.token);
    assert.equal(server.status, 200);
    assert.equal(server.body.name, "web");
    assert.equal((await hub("GET", `/users/${alice.name}/servers/nothing`, alice.token)).status, 404);
    const progress = await fetch(`${proxy()}/hub/api/users/${alice.name}/servers/web/progress`, {
      headers: { authorization: `token ${alice.token}` },
    });
    assert.equal(progress.headers.get("content-type"), "text/event-stream");
    const event = JSON.parse(
      (await progress.text())
        .split("\n")
        .find((l) => l.startsWith("data:"))!
        .slice(5),
    );
    assert.equal(event.ready, true);
    assert.match(event.url, /^\/r\//);
    const bad = await hub("POST", `/users/${alice.name}/servers/other`, alice.token, { user_options: "big" });
    assert.equal(bad.status, 400);
    const unknownProfile = await hub("POST", `/users/${alice.name}/servers/other`, alice.token, {
      user_options: { profile: "nope" },
    });
    assert.equal(unknownProfile.status, 400);
    assert.match(String(unknownProfile.body.message), /user_options.profile/);
    const stop = await hub("DELETE", `/users/${alice.name}/servers/web`, alice.token);
    assert.ok([202, 204].includes(stop.status));
  });

  test("tokens hold JupyterHub's scopes, never more than their owner", async () => {
    const reader = await issue(alice, [`read:servers!user=${alice.name}`], "reader");
    assert.equal((await hub("GET", `/users/${alice.name}`, reader.token)).status, 200);
    const refused = await hub("POST", `/users/${alice.name}/servers/more`, reader.token);
    assert.equal(refused.status, 403);
    assert.match(String(refused.body.message), /requires any of \[start:servers\]/);
    // Another user's servers, and every user, are not alice's.
    assert.equal((await hub("POST", `/users/${bob.name}/servers/lab`, alice.token)).status, 403);
    assert.equal((await hub("GET", `/users/${bob.name}`, alice.token)).status, 403);
    assert.equal((await hub("GET", "/users", alice.token)).status, 403);
    // Nor are alice's bob's, with the URL of her server in hand: not stopped, not read, not followed.
    for (const [method, path] of [
      ["DELETE", `/users/${alice.name}/servers/idle`],
      ["GET", `/users/${alice.name}/servers/idle`],
      ["GET", `/users/${alice.name}/servers/idle/progress`],
      ["POST", `/users/${alice.name}/activity`],
      ["GET", `/users/${alice.name}/tokens`],
    ] as const) {
      const res = await hub(method, path, bob.token);
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.deepEqual(Object.keys(res.body).sort(), ["message", "status"]);
    }
    const broken = await fetch(`${proxy()}/hub/api/users/${alice.name}/servers/x`, {
      method: "POST",
      headers: { authorization: `token ${alice.token}`, "content-type": "application/json" },
      body: "{not json",
    });
    assert.equal(broken.status, 400);
    assert.deepEqual(await broken.json(), { status: 400, message: "Body must be valid JSON" });
    const greedy = await hub("POST", `/users/${alice.name}/tokens`, alice.token, {
      scopes: ["admin:servers"],
    });
    assert.equal(greedy.status, 403);
    assert.match(String(greedy.body.message), /Not assigning requested scopes admin:servers/);
    assert.equal((await hub("POST", `/users/${bob.name}/tokens`, alice.token, {})).status, 403);
    // Listed, then revoked: refused from then on.
    const listed = await hub("GET", `/users/${alice.name}/tokens`, alice.token);
    assert.ok((listed.body.api_tokens as { id: string }[]).some((t) => t.id === reader.id));
    assert.equal((await hub("DELETE", `/users/${alice.name}/tokens/${reader.id}`, alice.token)).status, 204);
    await eventually(async () =>
      assert.equal((await hub("GET", `/users/${alice.name}`, reader.token)).status, 403),
    );
    const me = await hub("GET", "/user", alice.token);
    assert.equal(me.body.name, alice.name);
    assert.ok((me.body.scopes as string[]).includes(`start:servers!user=${alice.name}`));
    assert.equal((await hub("GET", "/user", "not-a-token")).status, 403);
  });
});
