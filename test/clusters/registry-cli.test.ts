/** `tenantry cluster add|list|label|remove` against the registry on the home cluster: as a user types it, bad input, an unreachable cluster. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { parse, stringify } from "yaml";
import { type Cluster, removeCluster } from "../../src/clusters/index.js";
import { findCondition, isNotFound } from "../../src/kube/index.js";
import { freePort } from "../../src/localcluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { adminClient, kubeconfigPath, tempDir, writeTemp } from "../multicluster/support.js";
import { uniqueName } from "../support/clusters.js";
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

describe("tenantry cluster", () => {
  const dir = tempDir("registry");
  const added: string[] = [];

  after(async () => {
    for (const name of added) await removeCluster(home, name, { force: true }).catch(() => {});
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
    // Each run of the CLI starts a process: these run side by side.
    const [missing, badName, badLabel, unknown, unknownRemove] = await Promise.all([
      cli("add", name, "--cluster-kubeconfig", "/nonexistent/kubeconfig"),
      cli("add", "Bad_Name", "--cluster-kubeconfig", kubeconfigPath("edge-2")),
      cli("add", name, "--cluster-kubeconfig", kubeconfigPath("edge-2"), "-l", "bad key=x"),
      cli("label", uniqueName("none"), "a=b"),
      cli("remove", uniqueName("none")),
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--cluster-kubeconfig \/nonexistent\/kubeconfig: no such file/);
    assert.equal(badName.code, 2);
    assert.match(badName.stderr, /must be a DNS label/);
    assert.equal(badLabel.code, 2);
    assert.match(badLabel.stderr, /cluster label key "bad key"/);
    assert.equal(unknown.code, 3);
    assert.match(unknown.stderr, /is not registered/);
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
});
