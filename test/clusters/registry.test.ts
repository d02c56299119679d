/** The cluster registry on the home cluster: the embedded clusters, `tenantry cluster …`, health, and peerings' labels. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { parse, stringify } from "yaml";
import type { Cluster } from "../../src/clusters/index.js";
import { findCondition, isNotFound } from "../../src/kube/index.js";
import { freePort } from "../../src/localcluster/index.js";
import { virtualNodeName } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import {
  adminClient,
  kubeconfigPath,
  readNode,
  tempDir,
  tenantryOn,
  writeTemp,
} from "../multicluster/support.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { tenantryCli } from "../support/kubectl.js";

const home = adminClient("home");
const cli = (...args: string[]) => tenantryCli(["cluster", ...args, "--kubeconfig", kubeconfigPath("home")]);

async function readCluster(name: string): Promise<Cluster | undefined> {
  try {
    return (await home.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Cluster",
      metadata: { name },
    })) as Cluster;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

describe("cluster registry", () => {
  const dir = tempDir("registry");
  const added: string[] = [];

  after(async () => {
    for (const name of added) await cli("remove", name, "--force");
  });

  test("holds the embedded clusters with health, version, capacity, user CA and tenantry identity", async () => {
    for (const name of testEnvironment().clusters.map((c) => c.name)) {
      const cluster = await eventually(async () => {
        const c = await readCluster(name);
        assert.equal(
          findCondition(c?.status?.conditions, "Ready")?.status,
          "True",
          JSON.stringify(c?.status),
        );
        assert.equal(c?.status?.clusterId, tenantryOn(name).clusterId);
        return c!;
      });
      assert.match(cluster.status?.version ?? "", /^v1\.\d+\.\d+/);
      assert.ok((cluster.status?.nodes ?? 0) >= 1);
      assert.ok(
        cluster.status?.capacity?.cpu && cluster.status.capacity.memory && cluster.status.capacity.pods,
      );
      assert.match(cluster.status?.userCa?.pem ?? "", /BEGIN CERTIFICATE/);
      assert.ok(Date.parse(cluster.status?.userCa?.notAfter ?? "") > Date.now());
      assert.ok(
        cluster.metadata?.labels?.["topology.kubernetes.io/region"],
        `${name} keeps its region label`,
      );
    }
  });

  test("tenantry cluster add, list, label and remove", async () => {
    const name = uniqueName("reg");
    const label = `${uniqueName("team")}=finance`;
    const [key, value] = label.split("=") as [string, string];
    const addResult = await cli(
      "add",
      name,
      "--cluster-kubeconfig",
      kubeconfigPath("edge-2"),
      "-l",
      label,
      "--provider",
      "edge-provider",
    );
    assert.equal(addResult.code, 0, addResult.stderr);
    added.push(name);
    assert.match(addResult.stdout, new RegExp(`cluster "${name}" registered`));

    const listed = await eventually(async () => {
      const result = await cli("list", "-l", `${key}=${value}`, "-o", "json");
      assert.equal(result.code, 0, result.stderr);
      const items = JSON.parse(result.stdout) as {
        name: string;
        provider: string;
        ready: { status: string };
      }[];
      assert.deepEqual(
        items.map((c) => c.name),
        [name],
      );
      assert.equal(items[0]!.ready.status, "True");
      return items[0]!;
    });
    assert.equal(listed.provider, "edge-provider");
    const table = await cli("list");
    assert.match(table.stdout, /NAME\s+PROVIDER\s+READY\s+VERSION/);
    assert.match(table.stdout, new RegExp(`${name}\\s+edge-provider\\s+True\\s+v1`));

    const again = await cli("add", name, "--cluster-kubeconfig", kubeconfigPath("edge-2"));
    assert.equal(again.code, 4, again.stderr);
    assert.match(again.stderr, /already registered/);

    const labelled = await cli("label", name, "stage=test", `${key}-`);
    assert.equal(labelled.code, 0, labelled.stderr);
    const after = await readCluster(name);
    assert.equal(after?.metadata?.labels?.stage, "test");
    assert.equal(after?.metadata?.labels?.[key], undefined);

    const removed = await cli("remove", name);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(await readCluster(name), undefined);
    await eventually(async () => {
      const secrets = await home.core.listNamespacedSecret({
        namespace: "tenantry-system",
        labelSelector: `tenantry.dev/cluster=${name}`,
      });
      assert.equal(secrets.items.length, 0, "the credentials go with the registration");
    });
  });

  test("bad input: exit codes and messages name what is wrong, nothing is registered", async () => {
    const name = uniqueName("bad");
    const missing = await cli("add", name, "--cluster-kubeconfig", "/nonexistent/kubeconfig");
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--cluster-kubeconfig \/nonexistent\/kubeconfig: no such file/);
    const badName = await cli("add", "Bad_Name", "--cluster-kubeconfig", kubeconfigPath("edge-2"));
    assert.equal(badName.code, 2);
    assert.match(badName.stderr, /must be a DNS label/);
    const badLabel = await cli(
      "add",
      name,
      "--cluster-kubeconfig",
      kubeconfigPath("edge-2"),
      "-l",
      "bad key=x",
    );
    assert.equal(badLabel.code, 2);
    assert.match(badLabel.stderr, /cluster label key "bad key"/);
    const unknown = await cli("label", uniqueName("none"), "a=b");
    assert.equal(unknown.code, 3);
    assert.match(unknown.stderr, /is not registered/);
    const unknownRemove = await cli("remove", uniqueName("none"));
    assert.equal(unknownRemove.code, 3);
    assert.equal(await readCluster(name), undefined);
  });

  test("a cluster that does not answer is refused, or registered with --skip-check and reported unreachable", async () => {
    const name = uniqueName("down");
    const config = parse(readFileSync(kubeconfigPath("edge-2"), "utf8")) as {
      clusters: { cluster: { server: string } }[];
    };
    config.clusters[0]!.cluster.server = `https://127.0.0.1:${await freePort()}`;
    const file = writeTemp(dir, `${name}.kubeconfig`, stringify(config));
    const refused = await cli("add", name, "--cluster-kubeconfig", file);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /does not answer with these credentials/);
    assert.equal(await readCluster(name), undefined);

    const forced = await cli("add", name, "--cluster-kubeconfig", file, "--skip-check");
    assert.equal(forced.code, 0, forced.stderr);
    added.push(name);
    const down = await eventually(async () => {
      const c = await readCluster(name);
      const ready = findCondition(c?.status?.conditions, "Ready");
      assert.equal(ready?.status, "False");
      return ready!;
    });
    assert.equal(down.reason, "ClusterUnreachable");
    assert.match(down.message, /readyz/);
  });

  test("peerings take a registered provider's labels from the registry: its virtual node follows a relabel", async () => {
    const key = `${uniqueName("lbl")}.example.com/zone`;
    const labelled = await cli("label", "edge-1", `${key}=blue`);
    assert.equal(labelled.code, 0, labelled.stderr);
    try {
      await eventually(async () => {
        const node = await readNode(home, virtualNodeName("edge-1"));
        assert.equal(node?.metadata?.labels?.[key], "blue");
        assert.equal(node?.metadata?.labels?.["tenantry.dev/type"], "virtual-node", "its own labels stay");
      });
    } finally {
      const unlabelled = await cli("label", "edge-1", `${key}-`);
      assert.equal(unlabelled.code, 0, unlabelled.stderr);
    }
    await eventually(async () => {
      const node = await readNode(home, virtualNodeName("edge-1"));
      assert.equal(node?.metadata?.labels?.[key], undefined);
      assert.equal(node?.metadata?.labels?.["topology.kubernetes.io/region"], "eu-south");
    });
  });
});
