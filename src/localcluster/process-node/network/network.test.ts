import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { claimNetwork, releaseNetwork } from "./claims.js";
import { inNamespace, networkNamespaces, run } from "./commands.js";
import { NodeNetwork } from "./index.js";
import { plansTakenByRoutes, removeNetwork } from "./node-network.js";
import { mappedAddress } from "./plan.js";

/** HTTP status of a GET from inside a namespace (0 when nothing answers within 2 s). */
async function statusFrom(namespace: string | undefined, url: string): Promise<number> {
  const script = `fetch(${JSON.stringify(url)},{signal:AbortSignal.timeout(2000)}).then(r=>console.log(r.status),()=>console.log(0))`;
  const out = namespace
    ? await inNamespace(namespace, process.execPath, ["-e", script])
    : await run(process.execPath, ["-e", script]);
  return Number(out.trim());
}

/** A node HTTP server answering 200 inside a namespace, on `ip:port`. */
function serveIn(namespace: string, ip: string, port: number): ChildProcess {
  return spawn(
    "nsenter",
    [
      `--net=/run/netns/${namespace}`,
      "--",
      process.execPath,
      "-e",
      `require("http").createServer((q,s)=>s.end("pod")).listen(${port},${JSON.stringify(ip)})`,
    ],
    { stdio: "ignore" },
  );
}

describe("the process node's pod network on this machine", { skip: process.getuid?.() !== 0 }, () => {
  let root: string;
  let clusterDir: string;
  let network: NodeNetwork;
  let listed: Server;
  let unlisted: Server;
  const children: ChildProcess[] = [];

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "pod-network-"));
    clusterDir = join(root, "cluster");
    await mkdir(clusterDir);
    listed = createServer((_q, s) => s.end("listed")).listen(0, "127.0.0.1");
    unlisted = createServer((_q, s) => s.end("unlisted")).listen(0, "127.0.0.1");
    await sleep(50);
    const port = (server: Server) => (server.address() as { port: number }).port;
    const plan = await claimNetwork(clusterDir, {
      isClusterRunning: async () => true,
      taken: await plansTakenByRoutes(),
      removeAbandoned: removeNetwork,
    });
    network = await NodeNetwork.start(plan, async () => [port(listed)]);
  });
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    listed.close();
    unlisted.close();
    await network?.stop();
    await releaseNetwork(clusterDir);
    await rm(root, { recursive: true, force: true });
  });

  test("pods answer each other and the machine, reach listed 127.0.0.1 ports only, and nothing beyond", async () => {
    const { plan } = network;
    const [a, b] = [plan.podCidr.replace(/0\/24$/, "5"), plan.podCidr.replace(/0\/24$/, "6")];
    const nsA = await network.attach("aaaaaaaa-0000-0000-0000-000000000001", a);
    const nsB = await network.attach("bbbbbbbb-0000-0000-0000-000000000002", b);
    children.push(serveIn(nsA, a, 8080));
    await sleep(300);
    assert.equal(await statusFrom(nsB, `http://${a}:8080/`), 200, "pod to pod over the bridge");
    assert.equal(
      await statusFrom(undefined, `http://${network.reach(a)}:8080/`),
      200,
      "the machine to the pod",
    );
    assert.equal(
      await statusFrom(undefined, `http://${mappedAddress(plan, a)}:8080/`),
      200,
      "the mapped address",
    );
    const port = (server: Server) => (server.address() as { port: number }).port;
    assert.equal(
      await statusFrom(nsB, `http://127.0.0.1:${port(listed)}/`),
      200,
      "a listed port of the machine",
    );
    assert.equal(await statusFrom(nsB, `http://127.0.0.1:${port(unlisted)}/`), 0, "an unlisted port");
    assert.equal(
      await statusFrom(nsB, `http://${plan.hostAddress}:${port(unlisted)}/`),
      0,
      "the link address",
    );
    assert.equal(await statusFrom(nsB, "http://192.0.2.1/"), 0, "anything beyond the harness");

    await network.detach("aaaaaaaa-0000-0000-0000-000000000001");
    assert.ok(!(await networkNamespaces()).includes(nsA), "a detached pod's namespace is gone");
  });

  test("stopping removes every namespace, link, route and table of the network", async () => {
    const { plan } = network;
    await network.stop();
    const namespaces = await networkNamespaces();
    assert.deepEqual(
      namespaces.filter((n) => n.startsWith(`tnr${plan.index}-`)),
      [],
    );
    assert.ok(!existsSync(`/sys/class/net/${plan.hostLink}`), "the machine's end of the link is gone");
    assert.ok(!(await run("ip", ["route", "show"])).includes(plan.hostLink), "no route over it is left");
    assert.ok(!(await run("nft", ["list", "tables"])).includes(plan.hostTable), "its table is gone");
  });
});
