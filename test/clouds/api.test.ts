/**
 * The logical-clouds REST API against the tenantry serving the home cluster: DCM's routes, bodies
 * and status codes, every refusal naming its field, and who may call.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { createCertificateRequest } from "../../src/pki/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { testUser } from "../support/users.js";
import { asUser, cloudPath, cloudsApi, removeProject } from "./support.js";

describe("logical-clouds API", () => {
  const project = uniqueName("api");
  const clouds: string[] = [];

  after(async () => {
    await removeProject(project, clouds);
  });

  test("projects: create, duplicate, read, replace, list, refusals", async () => {
    const created = await cloudsApi("POST", "/v2/projects", {
      body: { metadata: { name: project, description: "finance", userData1: "a" } },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.metadata, { name: project, description: "finance", userData1: "a" });
    const again = await cloudsApi("POST", "/v2/projects", { body: { metadata: { name: project } } });
    assert.equal(again.status, 409);
    assert.equal(again.body.field, "metadata.name");
    const read = await cloudsApi("GET", `/v2/projects/${project}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.metadata.description, "finance");
    const replaced = await cloudsApi("PUT", `/v2/projects/${project}`, {
      body: { metadata: { name: project, description: "finance department" } },
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.metadata.description, "finance department");
    const mismatch = await cloudsApi("PUT", `/v2/projects/${project}`, {
      body: { metadata: { name: "other" } },
    });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.field, "metadata.name");
    const list = await cloudsApi("GET", "/v2/projects");
    assert.ok(list.body.some((p: { metadata: { name: string } }) => p.metadata.name === project));
    assert.equal((await cloudsApi("GET", `/v2/projects/${uniqueName("none")}`)).status, 404);

    const empty = await cloudsApi("POST", "/v2/projects", { raw: "" });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.field, "body");
    const noName = await cloudsApi("POST", "/v2/projects", { body: { metadata: { description: "x" } } });
    assert.equal(noName.status, 400);
    assert.equal(noName.body.field, "metadata.name");
    const badJson = await cloudsApi("POST", "/v2/projects", { raw: "{not json" });
    assert.equal(badJson.status, 422);
    assert.equal(badJson.body.field, "body");
    const badName = await cloudsApi("POST", "/v2/projects", { body: { metadata: { name: "Bad_Name" } } });
    assert.equal(badName.status, 400);
    assert.match(badName.body.detail, /DNS label/);
  });

  test("logical clouds: create as DCM's curl does (form content type), refusals naming the field", async () => {
    const cloud = uniqueName("lc");
    clouds.push(cloud);
    const body = JSON.stringify({
      metadata: { name: cloud, description: "logical cloud for finance" },
      spec: { namespace: cloud, level: "1", user: { userName: "user-1", type: "certificate" } },
    });
    const created = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, {
      raw: body,
      contentType: "application/x-www-form-urlencoded",
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.spec, {
      namespace: cloud,
      level: "1",
      user: { userName: "user-1", type: "certificate" },
    });
    const duplicate = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, { raw: body });
    assert.equal(duplicate.status, 409);
    const unknownProject = await cloudsApi("POST", `/v2/projects/${uniqueName("none")}/logical-clouds`, {
      raw: body,
    });
    assert.equal(unknownProject.status, 404);
    assert.equal(unknownProject.body.field, "project");

    const refusals: [unknown, string, RegExp][] = [
      [{ metadata: { name: "x" }, spec: { level: "2" } }, "spec.level", /"0" \(admin\) or "1"/],
      [
        { metadata: { name: "x" }, spec: { user: { userName: "u" } } },
        "spec.namespace",
        /needs the namespace/,
      ],
      [{ metadata: { name: "x" }, spec: { namespace: "x" } }, "spec.user", /needs a user/],
      [
        { metadata: { name: "x" }, spec: { namespace: "x", user: { userName: "a b" } } },
        "spec.user.userName",
        /letters, digits/,
      ],
      [
        { metadata: { name: "x" }, spec: { namespace: "x", user: { userName: "u", type: "UNPW" } } },
        "spec.user.type",
        /only "certificate"/,
      ],
      [
        {
          metadata: { name: "x" },
          spec: { namespace: "x", labels: { "bad key": "v" }, user: { userName: "u" } },
        },
        "spec.labels.bad key",
        /not a label key/,
      ],
    ];
    for (const [refused, field, message] of refusals) {
      const answer = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, { body: refused });
      assert.equal(answer.status, 400, `${field}: ${answer.text}`);
      assert.equal(answer.body.field, field);
      assert.match(answer.body.detail, message);
    }

    const mallory = await createCertificateRequest("mallory", []);
    const foreign = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, {
      body: {
        metadata: { name: uniqueName("csr") },
        spec: { namespace: "x", user: { userName: "user-1", certificateRequest: mallory.csrPem } },
      },
    });
    assert.equal(foreign.status, 400, foreign.text);
    assert.equal(foreign.body.field, "spec.user.certificateRequest");
    assert.match(foreign.body.detail, /CN: "mallory" must be the username "user-1"/);
    assert.equal((await cloudsApi("GET", cloudPath(project, "never-made"))).status, 404);
  });

  test("sub-resources: add, duplicate, list, read, delete, refusals naming the field", async () => {
    const cloud = clouds[0]!;
    const base = cloudPath(project, cloud);
    const reference = await cloudsApi("POST", `${base}/cluster-references`, {
      body: { metadata: { name: "edge1" }, spec: { clusterProvider: "tenantry", cluster: "edge-1" } },
    });
    assert.equal(reference.status, 201, reference.text);
    assert.equal(
      (
        await cloudsApi("POST", `${base}/cluster-references`, {
          body: { metadata: { name: "edge1" }, spec: { cluster: "edge-1" } },
        })
      ).status,
      409,
    );
    const unknown = await cloudsApi("POST", `${base}/cluster-references`, {
      body: { metadata: { name: "x" }, spec: { cluster: "no-such-cluster" } },
    });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.field, "spec.cluster");
    const wrongProvider = await cloudsApi("POST", `${base}/cluster-references`, {
      body: { metadata: { name: "x" }, spec: { clusterProvider: "aws", cluster: "edge-1" } },
    });
    assert.equal(wrongProvider.status, 404);
    assert.match(wrongProvider.body.detail, /belongs to provider "tenantry"/);
    const both = await cloudsApi("POST", `${base}/cluster-references`, {
      body: {
        metadata: { name: "x" },
        spec: { cluster: "edge-1", clusterSelector: { matchLabels: { a: "b" } } },
      },
    });
    assert.equal(both.status, 400);
    assert.equal(both.body.field, "spec.clusterSelector");

    const badQuota = await cloudsApi("POST", `${base}/cluster-quotas`, {
      body: { metadata: { name: "q" }, spec: { "limits.cpu": "lots" } },
    });
    assert.equal(badQuota.status, 400);
    assert.equal(badQuota.body.field, "spec.limits.cpu");
    const badKey = await cloudsApi("POST", `${base}/cluster-quotas`, {
      body: { metadata: { name: "q" }, spec: { cpus: "4" } },
    });
    assert.equal(badKey.status, 400);
    assert.equal(badKey.body.field, "spec.cpus");
    const quota = await cloudsApi("POST", `${base}/cluster-quotas`, {
      body: { metadata: { name: "q" }, spec: { "limits.cpu": "4", pods: 10 } },
    });
    assert.equal(quota.status, 201, quota.text);
    assert.deepEqual(quota.body.spec, { "limits.cpu": "4", pods: "10" });

    const badVerb = await cloudsApi("POST", `${base}/user-permissions`, {
      body: {
        metadata: { name: "p" },
        spec: { namespace: cloud, apiGroups: [""], resources: ["pods"], verbs: ["get", "destroy"] },
      },
    });
    assert.equal(badVerb.status, 400);
    assert.equal(badVerb.body.field, "spec.verbs[1]");
    const strangers = await cloudsApi("POST", `${base}/user-permissions`, {
      body: {
        metadata: { name: "p" },
        spec: { namespace: cloud, apiGroups: [""], resources: ["pods"], verbs: ["get"], users: ["nobody"] },
      },
    });
    assert.equal(strangers.status, 400);
    assert.equal(strangers.body.field, "spec.users[0]");

    const kv = await cloudsApi("POST", `${base}/kv-pairs`, {
      body: { metadata: { name: "kv" }, spec: { kv: [{ owner: "finance" }] } },
    });
    assert.equal(kv.status, 201, kv.text);
    assert.deepEqual((await cloudsApi("GET", `${base}/kv-pairs/kv`)).body, {
      metadata: { name: "kv" },
      spec: { kv: [{ owner: "finance" }] },
    });
    const references = await cloudsApi("GET", `${base}/cluster-references`);
    assert.deepEqual(references.body, [
      { metadata: { name: "edge1" }, spec: { clusterProvider: "tenantry", cluster: "edge-1" } },
    ]);
    assert.equal((await cloudsApi("GET", `${base}/cluster-quotas/none`)).status, 404);
    assert.equal((await cloudsApi("DELETE", `${base}/kv-pairs/kv`)).status, 204);
    assert.equal((await cloudsApi("DELETE", `${base}/kv-pairs/kv`)).status, 404);
  });

  test("lifecycle refusals: DCM's, and tenantry's for a selector that matches nothing", async () => {
    const cloud = uniqueName("lc");
    clouds.push(cloud);
    const made = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, {
      body: { metadata: { name: cloud }, spec: { namespace: cloud, user: { userName: "user-1" } } },
    });
    assert.equal(made.status, 201, made.text);
    const base = cloudPath(project, cloud);
    const noReferences = await cloudsApi("POST", `${base}/instantiate`);
    assert.equal(noReferences.status, 400);
    assert.equal(noReferences.body.field, "cluster-references");
    await cloudsApi("POST", `${base}/cluster-references`, {
      body: {
        metadata: { name: "nowhere" },
        spec: { clusterSelector: { matchLabels: { [uniqueName("none")]: "x" } } },
      },
    });
    const noPermission = await cloudsApi("POST", `${base}/instantiate`);
    assert.equal(noPermission.status, 400);
    assert.equal(noPermission.body.field, "user-permissions");
    await cloudsApi("POST", `${base}/user-permissions`, {
      body: {
        metadata: { name: "all" },
        spec: { namespace: cloud, apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
      },
    });
    const nothingSelected = await cloudsApi("POST", `${base}/instantiate`);
    assert.equal(nothingSelected.status, 400, nothingSelected.text);
    assert.equal(nothingSelected.body.field, "cluster-references.nowhere");
    assert.match(nothingSelected.body.detail, /matches no registered cluster/);
    const badPolicy = await cloudsApi("POST", `${base}/instantiate`, { body: { onFailure: "ignore" } });
    assert.equal(badPolicy.status, 400);
    assert.equal(badPolicy.body.field, "onFailure");

    assert.equal((await cloudsApi("POST", `${base}/terminate`)).status, 409);
    assert.equal((await cloudsApi("POST", `${base}/update`)).status, 409);
    assert.equal((await cloudsApi("POST", `${base}/stop`)).status, 200);
    assert.equal((await cloudsApi("GET", `${base}/kubeconfig`)).status, 409);
    const status = await cloudsApi("GET", `${base}/status`);
    assert.equal(status.status, 200);
    assert.equal(status.body.state, "Created");
    assert.equal((await cloudsApi("GET", `${base}/status?status=bogus`)).body.field, "status");

    const level0 = uniqueName("admin");
    clouds.push(level0);
    await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, {
      body: { metadata: { name: level0 }, spec: { level: "0" } },
    });
    const quota = await cloudsApi("POST", `${cloudPath(project, level0)}/cluster-quotas`, {
      body: { metadata: { name: "q" }, spec: { pods: "1" } },
    });
    assert.equal(quota.status, 400);
    assert.match(quota.body.detail, /level-0 logical cloud has no quotas/);

    const deleted = await cloudsApi("DELETE", base);
    assert.equal(deleted.status, 204, "a never instantiated cloud may be deleted");
    clouds.splice(clouds.indexOf(cloud), 1);
    const project2 = await cloudsApi("DELETE", `/v2/projects/${project}`);
    assert.equal(project2.status, 409, "a project with logical clouds is not deleted");
  });

  test("who may call: nobody anonymous, strangers are forbidden, a project's admins manage its clouds", async () => {
    const anonymous = await cloudsApi("GET", "/v2/projects", { as: null });
    assert.equal(anonymous.status, 401);
    const stranger = await testUser(uniqueName("stranger"));
    const forbidden = await cloudsApi("POST", "/v2/projects", {
      as: asUser(stranger.kubeConfig),
      body: { metadata: { name: uniqueName("p") } },
    });
    assert.equal(forbidden.status, 403);
    assert.match(forbidden.body.detail, /may not create projects.tenantry.dev/);
    assert.equal(
      (await cloudsApi("GET", `${cloudPath(project, clouds[0]!)}`, { as: asUser(stranger.kubeConfig) }))
        .status,
      403,
    );
    const strangersList = await cloudsApi("GET", "/v2/projects", { as: asUser(stranger.kubeConfig) });
    assert.equal(strangersList.status, 200);
    assert.ok(!strangersList.body.some((p: { metadata: { name: string } }) => p.metadata.name === project));

    const projectAdmin = await testUser(uniqueName("padmin"));
    const updated = await cloudsApi("PUT", `/v2/projects/${project}`, {
      body: { metadata: { name: project }, spec: { admins: [{ kind: "User", name: projectAdmin.name }] } },
    });
    assert.equal(updated.status, 200, updated.text);
    const cloud = uniqueName("lc");
    await eventually(async () => {
      const made = await cloudsApi("POST", `/v2/projects/${project}/logical-clouds`, {
        as: asUser(projectAdmin.kubeConfig),
        body: { metadata: { name: cloud }, spec: { namespace: cloud, user: { userName: "user-1" } } },
      });
      assert.equal(made.status, 201, made.text);
    });
    clouds.push(cloud);
    const listed = await cloudsApi("GET", "/v2/projects", { as: asUser(projectAdmin.kubeConfig) });
    assert.deepEqual(
      listed.body.map((p: { metadata: { name: string } }) => p.metadata.name),
      [project],
    );
    const notTheirs = await cloudsApi("DELETE", `/v2/projects/${project}`, {
      as: asUser(projectAdmin.kubeConfig),
    });
    assert.equal(notTheirs.status, 403, "a project's admins do not delete the project");
  });

  test("serves its OpenAPI document", async () => {
    const doc = await cloudsApi("GET", "/v2/openapi.json");
    assert.equal(doc.status, 200);
    assert.ok(doc.body.paths["/v2/projects/{project}/logical-clouds/{lc}/instantiate"]);
    assert.ok(
      doc.body.paths["/v2/projects/{project}/logical-clouds/{lc}/cluster-references/{name}/kubeconfig"],
    );
  });
});
