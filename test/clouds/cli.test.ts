/**
 * `tenantry cloud …` as the README walks a new user through it: a logical cloud over edge-1 and
 * edge-2 chosen by label, one kubeconfig working in both, home labelled in, terminated, deleted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { kubeconfigPath, tempDir, writeTemp } from "../multicluster/support.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { kubectl, tenantryCli } from "../support/kubectl.js";
import { removeProject, setClusterLabel, statusBecomes } from "./support.js";

describe("tenantry cloud", () => {
  const dir = tempDir("cloud-cli");
  const project = uniqueName("cli");
  const cloud = uniqueName("payroll");
  const key = `${uniqueName("team")}.example.com/team`;
  let connection: string[];
  const cli = (...args: string[]) => tenantryCli(["cloud", ...args, ...connection]);

  before(async () => {
    const env = testEnvironment();
    const ca = writeTemp(dir, "ca.pem", env.tenantry.logicalCloudsCaPem ?? "");
    connection = [
      "--url",
      env.tenantry.logicalCloudsUrl!,
      "--ca-file",
      ca,
      "--kubeconfig",
      kubeconfigPath("home"),
    ];
    await setClusterLabel("edge-1", key, "finance");
    await setClusterLabel("edge-2", key, "finance");
  });

  after(async () => {
    for (const cluster of ["home", "edge-1", "edge-2"]) await setClusterLabel(cluster, key, null);
    await removeProject(project, [cloud]);
  });

  test("create, instantiate with progress per cluster, kubeconfig for both, home joins, terminate, delete", async () => {
    const created = await cli(
      "create",
      project,
      cloud,
      "--user",
      "alice",
      "--user",
      "bob",
      "--selector",
      `${key}=finance`,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, new RegExp(`project "${project}" created`));

    const instantiated = await cli("instantiate", project, cloud);
    assert.equal(instantiated.code, 0, instantiated.stderr);
    assert.match(instantiated.stderr, /edge-1: Ready in \d+\.\d+s/);
    assert.match(instantiated.stderr, /edge-2: Ready in \d+\.\d+s/);
    assert.match(instantiated.stdout, /Instantiated/);

    const file = `${dir}/alice.kubeconfig`;
    const written = await cli("kubeconfig", project, cloud, "--user", "alice", "-o", file);
    assert.equal(written.code, 0, written.stderr);
    for (const context of ["edge-1", "edge-2"]) {
      const run = await kubectl(file, ["--context", context, "create", "deployment", "web", "--image=nginx"]);
      assert.equal(run.code, 0, run.stderr);
    }

    await setClusterLabel("home", key, "finance");
    await statusBecomes(project, cloud, (s) =>
      assert.ok(
        s.clusters.some(
          (c: { cluster: string; state: string }) => c.cluster === "home" && c.state === "Ready",
        ),
        JSON.stringify(s),
      ),
    );
    const text = await cli("status", project, cloud);
    assert.match(text.stdout, /Instantiated/);
    assert.match(text.stdout, /CLUSTER\s+PROVIDER\s+STATE/);
    assert.match(text.stdout, /home\s+tenantry\s+Ready/);

    const terminated = await cli("terminate", project, cloud);
    assert.equal(terminated.code, 0, terminated.stderr);
    assert.match(terminated.stderr, /edge-1: Removed/);
    const deleted = await cli("delete", project, cloud);
    assert.equal(deleted.code, 0, deleted.stderr);
  });

  test("bad input: exit codes and messages name what is wrong", async () => {
    // Each run of the CLI starts a process: these run side by side.
    const [noUser, badSelector, badQuota, unknown] = await Promise.all([
      cli("create", project, uniqueName("x"), "--cluster", "edge-1"),
      cli("create", project, uniqueName("x"), "--user", "a", "--selector", "a in b"),
      cli("create", project, uniqueName("x"), "--user", "a", "--cluster", "edge-1", "--quota", "pods=many"),
      cli("status", project, "no-such-cloud"),
    ]);
    assert.equal(noUser.code, 2);
    assert.match(noUser.stderr, /--user/);
    assert.equal(badSelector.code, 2);
    assert.match(badSelector.stderr, /is not a requirement/);
    assert.equal(badQuota.code, 2);
    assert.match(badQuota.stderr, /spec.pods: "many" is not a quantity/);
    assert.equal(unknown.code, 3);
  });
});
