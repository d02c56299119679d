import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { tenantryIdentity } from "./identity.js";
import { ownerLabelsOnCreate, ownerLabelsOnUpdate } from "./owner-labels.js";

const identity = tenantryIdentity("tenantry-admin", "tenantry-system");
const acme = {
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "Tenant",
  metadata: { name: "acme" },
  spec: { owners: [{ kind: "User", name: "alice" }] },
} as Tenant;

function request(
  operation: "CREATE" | "UPDATE",
  resource: { group: string; resource: string },
  username: string,
  object: Record<string, unknown>,
  oldObject?: Record<string, unknown>,
): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: resource.group, version: "v1", kind: "X" },
    resource: { ...resource, version: "v1" },
    namespace: "acme-dev",
    operation,
    userInfo: { username, groups: ["system:authenticated"] },
    object,
    ...(oldObject ? { oldObject } : {}),
  };
}

const configMaps = { group: "", resource: "configmaps" };
const deployments = { group: "apps", resource: "deployments" };

describe("owner labels on creation", () => {
  test("a user's object gets the tenant and their user label, replacing one they wrote", () => {
    assert.deepEqual(
      ownerLabelsOnCreate(
        request("CREATE", configMaps, "alice", { metadata: { name: "c" } }),
        acme,
        identity,
      ),
      {
        allowed: true,
        patch: [
          {
            op: "add",
            path: "/metadata/labels",
            value: { "tenantry.dev/tenant": "acme", "tenantry.dev/user": "alice" },
          },
        ],
      },
    );
    const spoofed = { metadata: { name: "c", labels: { "tenantry.dev/user": "bob", app: "x" } } };
    assert.deepEqual(
      ownerLabelsOnCreate(request("CREATE", configMaps, "zangrand@infn.it", spoofed), acme, identity),
      {
        allowed: true,
        patch: [
          { op: "add", path: "/metadata/labels/tenantry.dev~1tenant", value: "acme" },
          {
            op: "replace",
            path: "/metadata/labels/tenantry.dev~1user",
            value: "zangrand-at-infn.it-abb9f22d86",
          },
        ],
      },
    );
  });

  test("pod templates carry the labels too, so the pods controllers create from them are the user's", () => {
    const deployment = {
      metadata: { name: "web", labels: { app: "web" } },
      spec: { template: { metadata: { labels: { app: "web" } } } },
    };
    assert.deepEqual(
      ownerLabelsOnCreate(request("CREATE", deployments, "alice", deployment), acme, identity),
      {
        allowed: true,
        patch: [
          { op: "add", path: "/metadata/labels/tenantry.dev~1tenant", value: "acme" },
          { op: "add", path: "/metadata/labels/tenantry.dev~1user", value: "alice" },
          { op: "add", path: "/spec/template/metadata/labels/tenantry.dev~1tenant", value: "acme" },
          { op: "add", path: "/spec/template/metadata/labels/tenantry.dev~1user", value: "alice" },
        ],
      },
    );
    const cronJob = { metadata: { name: "c" }, spec: { jobTemplate: { spec: { template: { spec: {} } } } } };
    const labels = { "tenantry.dev/tenant": "acme", "tenantry.dev/user": "alice" };
    assert.deepEqual(
      ownerLabelsOnCreate(
        request("CREATE", { group: "batch", resource: "cronjobs" }, "alice", cronJob),
        acme,
        identity,
      ),
      {
        allowed: true,
        patch: [
          { op: "add", path: "/metadata/labels", value: labels },
          { op: "add", path: "/spec/jobTemplate/metadata", value: { labels } },
          { op: "add", path: "/spec/jobTemplate/spec/template/metadata", value: { labels } },
        ],
      },
    );
  });

  test("cluster components add only the tenant label; tenantry's objects, events and subresources are left alone", () => {
    const pod = { metadata: { name: "web-1", labels: { "tenantry.dev/user": "alice" } } };
    const byController = request(
      "CREATE",
      { group: "", resource: "pods" },
      "system:serviceaccount:kube-system:replicaset-controller",
      pod,
    );
    assert.deepEqual(ownerLabelsOnCreate(byController, acme, identity), {
      allowed: true,
      patch: [{ op: "add", path: "/metadata/labels/tenantry.dev~1tenant", value: "acme" }],
    });
    assert.deepEqual(
      ownerLabelsOnCreate(request("CREATE", configMaps, "tenantry-admin", { metadata: {} }), acme, identity),
      { allowed: true },
    );
    assert.deepEqual(
      ownerLabelsOnCreate(
        request("CREATE", { group: "", resource: "events" }, "alice", { metadata: {} }),
        acme,
        identity,
      ),
      { allowed: true },
    );
    const eviction = {
      ...request("CREATE", { group: "", resource: "pods" }, "alice", {}),
      subResource: "eviction",
    };
    assert.deepEqual(ownerLabelsOnCreate(eviction, acme, identity), { allowed: true });
  });

  test("a tenant service account is a tenant user; a cordoned tenant refuses new objects from users", () => {
    const bySa = ownerLabelsOnCreate(
      request("CREATE", configMaps, "system:serviceaccount:acme-dev:builder", { metadata: { labels: {} } }),
      acme,
      identity,
    );
    assert.deepEqual(bySa, {
      allowed: true,
      patch: [
        { op: "add", path: "/metadata/labels/tenantry.dev~1tenant", value: "acme" },
        {
          op: "add",
          path: "/metadata/labels/tenantry.dev~1user",
          value: "system_serviceaccount_acme-dev_builder-4bedff9725",
        },
      ],
    });
    const cordoned = { ...acme, spec: { ...acme.spec, cordoned: true } } as Tenant;
    assert.deepEqual(
      ownerLabelsOnCreate(request("CREATE", configMaps, "alice", { metadata: {} }), cordoned, identity),
      {
        allowed: false,
        code: 403,
        message:
          'metadata.namespace: tenant "acme" is cordoned (spec.cordoned): nothing new may be created in its namespaces',
      },
    );
  });
});

describe("owner labels on update", () => {
  const labelled = {
    metadata: {
      name: "c",
      labels: { "tenantry.dev/tenant": "acme", "tenantry.dev/user": "alice", app: "x" },
    },
  };

  test("changed or removed owner labels are put back as they were", () => {
    const relabelled = { metadata: { name: "c", labels: { "tenantry.dev/user": "bob", app: "y" } } };
    assert.deepEqual(
      ownerLabelsOnUpdate(request("UPDATE", configMaps, "bob", relabelled, labelled), identity),
      {
        allowed: true,
        patch: [
          { op: "add", path: "/metadata/labels/tenantry.dev~1tenant", value: "acme" },
          { op: "replace", path: "/metadata/labels/tenantry.dev~1user", value: "alice" },
        ],
      },
    );
    assert.deepEqual(
      ownerLabelsOnUpdate(
        request("UPDATE", configMaps, "bob", { metadata: { name: "c" } }, labelled),
        identity,
      ),
      {
        allowed: true,
        patch: [
          {
            op: "add",
            path: "/metadata/labels",
            value: { "tenantry.dev/tenant": "acme", "tenantry.dev/user": "alice" },
          },
        ],
      },
    );
  });

  test("a user label cannot be added to an object that had none, nor to its pod template", () => {
    const before = {
      metadata: { name: "web" },
      spec: { template: { metadata: { labels: { app: "web" } } } },
    };
    const after = {
      metadata: { name: "web", labels: { "tenantry.dev/user": "alice" } },
      spec: { template: { metadata: { labels: { app: "web", "tenantry.dev/user": "alice" } } } },
    };
    assert.deepEqual(ownerLabelsOnUpdate(request("UPDATE", deployments, "bob", after, before), identity), {
      allowed: true,
      patch: [
        { op: "remove", path: "/metadata/labels/tenantry.dev~1user" },
        { op: "remove", path: "/spec/template/metadata/labels/tenantry.dev~1user" },
      ],
    });
  });

  test("unchanged labels and updates by cluster components need nothing", () => {
    assert.deepEqual(
      ownerLabelsOnUpdate(request("UPDATE", configMaps, "alice", labelled, labelled), identity),
      {
        allowed: true,
      },
    );
    const stripped = { metadata: { name: "c" } };
    assert.deepEqual(
      ownerLabelsOnUpdate(
        request(
          "UPDATE",
          configMaps,
          "system:serviceaccount:kube-system:generic-garbage-collector",
          stripped,
          labelled,
        ),
        identity,
      ),
      { allowed: true },
    );
  });
});
