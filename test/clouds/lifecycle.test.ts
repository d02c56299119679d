/**
 * A logical cloud over the shared clusters, end to end: instantiated by label over edge-1 and
 * edge-2, one kubeconfig working in both, changes reaching every cluster, home joining and leaving
 * by label, terminate removing exactly what it made.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { DEFAULT_QUOTA, LOGICAL_CLOUD_UID_LABEL } from "../../src/clouds/index.js";
import type { ClusterClient } from "../../src/kube/index.js";
import { adminClient, tempDir } from "../multicluster/support.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import {
  cloudPath,
  cloudsApi,
  createCloud,
  exists,
  removeProject,
  setClusterLabel,
  statusBecomes,
} from "./support.js";

const RBAC = "rbac.authorization.k8s.io/v1";

describe("a logical cloud over the shared clusters", () => {
  const project = uniqueName("life");
  const key = `${uniqueName("team")}.example.com/team`;
  const cloud = uniqueName("finance");
  const namespace = cloud;
  const clouds = [cloud];
  const dir = tempDir("clouds");
  const clients: Record<string, ClusterClient> = {
    home: adminClient("home"),
    "edge-1": adminClient("edge-1"),
    "edge-2": adminClient("edge-2"),
  };
  let kubeconfigFile = "";
  let uid = "";

  before(async () => {
    await setClusterLabel("edge-1", key, "finance");
    await setClusterLabel("edge-2", key, "finance");
  });

  after(async () => {
    await setClusterLabel("home", key, null);
    await setClusterLabel("edge-1", key, null);
    await setClusterLabel("edge-2", key, null);
    await removeProject(project, clouds);
  });

  const ready =
    (...names: string[]) =>
    (s: { deployedStatus: string; clusters: { cluster: string; state: string }[] }) => {
      assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s));
      assert.deepEqual(
        s.clusters.filter((c) => c.state === "Ready").map((c) => c.cluster),
        names,
      );
    };

  test("instantiated by label over edge-1 and edge-2: namespace, default quota, container defaults, permissions, certificates", async () => {
    await createCloud(project, cloud, {
      users: ["user-1", "user-2"],
      references: [
        { metadata: { name: "finance" }, spec: { clusterSelector: { matchLabels: { [key]: "finance" } } } },
      ],
      extra: { labels: { team: "finance" } },
    });
    const answer = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`);
    assert.equal(answer.status, 202, answer.text);
    const status = await statusBecomes(project, cloud, ready("edge-1", "edge-2"));
    assert.equal(status.state, "Instantiated");
    assert.ok(status.states.actions.some((a: { instance: string }) => a.instance === answer.body.instance));
    for (const c of status.clusters) {
      assert.equal(c.connectivity, "Available");
      assert.equal(c.certificates.length, 2);
      assert.ok(c.applyMs >= 0);
    }
    for (const name of ["edge-1", "edge-2"]) {
      const client = clients[name]!;
      const ns = await client.core.readNamespace({ name: namespace });
      assert.equal(ns.metadata?.labels?.team, "finance");
      uid = ns.metadata!.labels![LOGICAL_CLOUD_UID_LABEL]!;
      assert.ok(uid);
      const quota = await client.core.readNamespacedResourceQuota({ name: "tenantry-default", namespace });
      assert.deepEqual(quota.spec?.hard, DEFAULT_QUOTA);
      const limits = await client.core.readNamespacedLimitRange({ name: "tenantry-defaults", namespace });
      assert.equal(limits.spec?.limits[0]?.defaultRequest?.cpu, "100m");
      const bindings = await client.objects.list(RBAC, "RoleBinding", namespace);
      assert.equal(bindings.items.length, 1);
      assert.deepEqual(
        (bindings.items[0] as { subjects: { name: string }[] }).subjects.map((s) => s.name),
        ["user-1", "user-2"],
      );
    }
  });

  test("one kubeconfig with a context per cluster works in both, and only in the cloud's namespace", async () => {
    const answer = await cloudsApi("GET", `${cloudPath(project, cloud)}/kubeconfig`);
    assert.equal(answer.status, 200, answer.text);
    assert.match(String(answer.headers["content-type"]), /application\/yaml/);
    const config = parse(answer.text);
    assert.deepEqual(
      config.contexts.map((c: { name: string }) => c.name),
      ["edge-1", "edge-2"],
    );
    kubeconfigFile = join(dir, "user-1.kubeconfig");
    writeFileSync(kubeconfigFile, answer.text, { mode: 0o600 });
    for (const context of ["edge-1", "edge-2"]) {
      const created = await kubectl(kubeconfigFile, [
        "--context",
        context,
        "create",
        "configmap",
        "hello",
        "--from-literal=a=b",
      ]);
      assert.equal(created.code, 0, created.stderr);
      const deployed = await kubectl(kubeconfigFile, [
        "--context",
        context,
        "create",
        "deployment",
        "web",
        "--image=nginx",
      ]);
      assert.equal(deployed.code, 0, deployed.stderr);
      const outside = await kubectl(kubeconfigFile, ["--context", context, "get", "pods", "-n", "default"]);
      assert.notEqual(outside.code, 0);
      assert.match(outside.stderr, /forbidden/i);
      const namespaces = await kubectl(kubeconfigFile, ["--context", context, "get", "namespaces"]);
      assert.match(namespaces.stderr, /forbidden/i);
    }
    const second = await cloudsApi("GET", `${cloudPath(project, cloud)}/kubeconfig?user=user-2`);
    assert.equal(second.status, 200);
    assert.equal(parse(second.text).users[0].name, "edge-1/user-2");
    const byReference = await cloudsApi(
      "GET",
      `${cloudPath(project, cloud)}/cluster-references/finance/kubeconfig`,
    );
    assert.equal(parse(byReference.text).contexts.length, 2);
    const nobody = await cloudsApi("GET", `${cloudPath(project, cloud)}/kubeconfig?user=nobody`);
    assert.equal(nobody.status, 404);
    assert.equal(nobody.body.field, "user");
  });

  test("quotas and permissions changed after instantiation reach every cluster", async () => {
    const base = cloudPath(project, cloud);
    const quota = await cloudsApi("POST", `${base}/cluster-quotas`, {
      body: { metadata: { name: "small" }, spec: { "requests.cpu": "2", pods: "7" } },
    });
    assert.equal(quota.status, 201, quota.text);
    const permission = await cloudsApi("POST", `${base}/user-permissions`, {
      body: {
        metadata: { name: "nodes" },
        spec: { namespace: "", apiGroups: [""], resources: ["nodes"], verbs: ["get", "list"] },
      },
    });
    assert.equal(permission.status, 201, permission.text);
    assert.equal((await cloudsApi("POST", `${base}/update`)).status, 202);
    for (const name of ["edge-1", "edge-2"]) {
      const client = clients[name]!;
      await eventually(async () => {
        const small = await client.core.readNamespacedResourceQuota({ name: "small", namespace });
        assert.equal(small.spec?.hard?.pods, "7");
        assert.equal(
          await exists(client, "v1", "ResourceQuota", "tenantry-default", namespace),
          false,
          "the default quota gives way",
        );
        const roles = await client.objects.list(
          RBAC,
          "ClusterRoleBinding",
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          `${LOGICAL_CLOUD_UID_LABEL}=${uid}`,
        );
        assert.equal(roles.items.length, 1);
      });
    }
    const nodes = await kubectl(kubeconfigFile, ["--context", "edge-2", "get", "nodes"]);
    assert.equal(nodes.code, 0, nodes.stderr);
    await statusBecomes(project, cloud, (s) => assert.equal(s.state, "Updated"));
    assert.equal((await cloudsApi("DELETE", `${base}/user-permissions/nodes`)).status, 204);
    await eventually(
      async () => {
        const denied = await kubectl(kubeconfigFile, ["--context", "edge-1", "get", "nodes"]);
        assert.match(denied.stderr, /forbidden/i);
      },
      { timeoutMs: 90_000 },
    );
  });

  test("labelling home into the cloud configures it within seconds; removing the label cleans it up", async () => {
    await setClusterLabel("home", key, "finance");
    await statusBecomes(project, cloud, ready("edge-1", "edge-2", "home"), 30_000);
    const ns = await clients.home!.core.readNamespace({ name: namespace });
    assert.equal(ns.metadata?.labels?.[LOGICAL_CLOUD_UID_LABEL], uid);
    const config = await cloudsApi("GET", `${cloudPath(project, cloud)}/kubeconfig`);
    const file = join(dir, "with-home.kubeconfig");
    writeFileSync(file, config.text, { mode: 0o600 });
    const onHome = await kubectl(file, ["--context", "home", "create", "configmap", "hello"]);
    assert.equal(onHome.code, 0, onHome.stderr);

    await setClusterLabel("home", key, null);
    await statusBecomes(project, cloud, ready("edge-1", "edge-2"), 60_000);
    await eventually(
      async () => assert.equal(await exists(clients.home!, "v1", "Namespace", namespace), false),
      { timeoutMs: 60_000 },
    );
  });

  test("terminate removes exactly what it made everywhere and the users' access with it", async () => {
    // Not the cloud's: stays.
    const bystander = uniqueName("bystander");
    await clients["edge-1"]!.core.createNamespace({
      body: { metadata: { name: bystander, labels: { team: "finance" } } },
    });
    try {
      const answer = await cloudsApi("POST", `${cloudPath(project, cloud)}/terminate`);
      assert.equal(answer.status, 202, answer.text);
      assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/terminate`)).status, 409);
      const status = await statusBecomes(
        project,
        cloud,
        (s) => assert.equal(s.deployedStatus, "Terminated", JSON.stringify(s)),
        120_000,
      );
      for (const c of status.clusters) assert.equal(c.state, "Removed", JSON.stringify(status));
      for (const name of ["edge-1", "edge-2"]) {
        assert.ok(
          status.clusters.some((c: { cluster: string }) => c.cluster === name),
          `${name} is listed as Removed`,
        );
      }
      for (const name of ["edge-1", "edge-2"]) {
        const client = clients[name]!;
        assert.equal(await exists(client, "v1", "Namespace", namespace), false);
        for (const kind of ["ClusterRole", "ClusterRoleBinding"]) {
          const left = await client.objects.list(
            RBAC,
            kind,
            undefined,
            undefined,
            undefined,
            undefined,
            undefined,
            `${LOGICAL_CLOUD_UID_LABEL}=${uid}`,
          );
          assert.equal(left.items.length, 0, `${kind} in ${name}`);
        }
        const revoked = await kubectl(kubeconfigFile, [
          "--context",
          name,
          "get",
          "configmaps",
          "-n",
          namespace,
        ]);
        assert.match(revoked.stderr, /forbidden/i, "the certificate still authenticates but may do nothing");
      }
      assert.equal(await exists(clients["edge-1"]!, "v1", "Namespace", bystander), true);
      assert.equal((await cloudsApi("GET", `${cloudPath(project, cloud)}/kubeconfig`)).status, 409);
    } finally {
      await clients["edge-1"]!.core.deleteNamespace({ name: bystander }).catch(() => {});
    }
  });
});
