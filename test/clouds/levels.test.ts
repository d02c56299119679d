/** Logical clouds of level 0 (the clusters' own credentials) and users who bring their own certificate request. */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { parse, stringify } from "yaml";
import { LOGICAL_CLOUD_UID_LABEL } from "../../src/clouds/index.js";
import { createCertificateRequest } from "../../src/pki/index.js";
import { adminClient, tempDir } from "../multicluster/support.js";
import { uniqueName } from "../support/clusters.js";
import { kubectl } from "../support/kubectl.js";
import { cloudPath, cloudsApi, createCloud, removeProject, statusBecomes } from "./support.js";

describe("logical clouds: levels and users' own requests", () => {
  const project = uniqueName("levels");
  const clouds: string[] = [];
  const dir = tempDir("levels");
  const clients = { "edge-2": adminClient("edge-2") };

  after(async () => {
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

  test("level 0: instantiated with the clusters' own credentials, nothing made in them", async () => {
    const admin = uniqueName("admin");
    clouds.push(admin);
    await createCloud(project, admin, {
      level: "0",
      references: [{ metadata: { name: "e2" }, spec: { cluster: "edge-2" } }],
    });
    assert.equal((await cloudsApi("POST", `${cloudPath(project, admin)}/instantiate`)).status, 202);
    await statusBecomes(project, admin, ready("edge-2"));
    const config = await cloudsApi("GET", `${cloudPath(project, admin)}/kubeconfig`);
    assert.equal(config.status, 200, config.text);
    const file = join(dir, "admin.kubeconfig");
    writeFileSync(file, config.text, { mode: 0o600 });
    const nodes = await kubectl(file, ["--context", "edge-2", "get", "nodes"]);
    assert.equal(nodes.code, 0, nodes.stderr);
    const made = await clients["edge-2"]!.core.listNamespace({ labelSelector: LOGICAL_CLOUD_UID_LABEL });
    assert.ok(
      !made.items.some(
        (n) => n.metadata?.annotations?.["tenantry.dev/logical-cloud"] === `${project}/${admin}`,
      ),
    );
    assert.equal((await cloudsApi("POST", `${cloudPath(project, admin)}/terminate`)).status, 202);
    await statusBecomes(project, admin, (s) => assert.equal(s.deployedStatus, "Terminated"));
  });

  test("a user's own certificate request: each cluster signs it, tenantry never holds the key", async () => {
    const own = uniqueName("own");
    clouds.push(own);
    const { csrPem, keyPem } = await createCertificateRequest("carol", [own]);
    const made = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, {
      body: {
        metadata: { name: own },
        spec: {
          namespace: own,
          user: { userName: "carol", type: "certificate", certificateRequest: csrPem },
        },
      },
    });
    assert.equal(made.status, 201, made.text);
    await cloudsApi("POST", `${cloudPath(project, own)}/cluster-references`, {
      body: { metadata: { name: "e2" }, spec: { cluster: "edge-2" } },
    });
    await cloudsApi("POST", `${cloudPath(project, own)}/user-permissions`, {
      body: {
        metadata: { name: "pods" },
        spec: {
          namespace: own,
          apiGroups: [""],
          resources: ["pods", "configmaps"],
          verbs: ["get", "list", "create"],
        },
      },
    });
    assert.equal(
      (await cloudsApi("POST", `${cloudPath(project, own)}/instantiate`, { body: { onFailure: "keep" } }))
        .status,
      202,
    );
    await statusBecomes(project, own, ready("edge-2"));
    const config = parse((await cloudsApi("GET", `${cloudPath(project, own)}/kubeconfig`)).text);
    assert.equal(config.users[0].user["client-key-data"], undefined, "tenantry never had the key");
    config.users[0].user["client-key-data"] = Buffer.from(keyPem).toString("base64");
    const file = join(dir, "carol.kubeconfig");
    writeFileSync(file, stringify(config), { mode: 0o600 });
    const created = await kubectl(file, ["create", "configmap", "mine"]);
    assert.equal(created.code, 0, created.stderr);
    const notAllowed = await kubectl(file, ["create", "secret", "generic", "s"]);
    assert.match(notAllowed.stderr, /forbidden/i, "only what the permission grants");
  });
});
