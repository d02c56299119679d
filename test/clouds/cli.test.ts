/**
 * `tenantry cloud …` as the README walks a new user through it: a logical cloud over edge-1 and
 * edge-2 chosen by label, one kubeconfig working in both, home labelled in, terminated, deleted.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { kubeconfigPath, tempDir, writeTemp } from "../multicluster/support.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { kubectl, tenantryCli } from "../support/kubectl.js";
import { cloudsApi, removeProject, setClusterLabel, statusBecomes } from "./support.js";

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

  test("a create the API refuses part-way leaves nothing behind: the cloud, its references and a project it made", async () => {
    const kept = uniqueName("kept");
    const fresh = uniqueName("fresh");
    const [inKept, inFresh] = [uniqueName("half"), uniqueName("half")];
    assert.equal(
      (await cloudsApi("POST", "/v2/projects", { body: { metadata: { name: kept } } })).status,
      201,
    );
    try {
      // The second reference names a cluster only the API can know is not registered: the cloud
      // and the first reference are written by then.
      const refused = (p: string, c: string) =>
        cli("create", p, c, "--user", "a", "--cluster", "edge-1", "--cluster", uniqueName("nowhere"));
      const [intoKept, intoFresh] = await Promise.all([refused(kept, inKept), refused(fresh, inFresh)]);
      for (const run of [intoKept, intoFresh]) {
        assert.equal(run.code, 3, run.stderr);
        assert.match(run.stderr, /is not registered/);
        assert.match(run.stderr, /removed logical cloud/);
      }
      assert.match(intoFresh.stderr, new RegExp(`removed project "${fresh}"`));
      assert.equal((await cloudsApi("GET", `/v2/projects/${fresh}`)).status, 404);
      assert.equal((await cloudsApi("GET", `/v2/projects/${kept}`)).status, 200, "a project it found stays");
      assert.deepEqual((await cloudsApi("GET", `/v2/projects/${kept}/logical-clouds`)).body, []);
    } finally {
      await removeProject(kept);
      await removeProject(fresh);
    }
  });
});
