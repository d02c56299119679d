import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Tenant } from "../api/tenant.js";
import {
  defaultPullPolicy,
  parseImage,
  pullPolicyDefault,
  pullPolicyViolation,
  registryAllowed,
  registryViolation,
} from "./images.js";

function tenant(allowed: NonNullable<Tenant["spec"]["allowed"]>): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name: "acme" },
    spec: { owners: [{ kind: "User", name: "alice" }], allowed },
  } as Tenant;
}

describe("image references", () => {
  test("are read as the container runtime reads them", () => {
    assert.deepEqual(parseImage("nginx"), { registry: "docker.io", repository: "docker.io/library/nginx" });
    assert.deepEqual(parseImage("bitnami/redis:7.2"), {
      registry: "docker.io",
      repository: "docker.io/bitnami/redis",
      tag: "7.2",
    });
    assert.deepEqual(parseImage("quay.io/acme/app:1.0@sha256:abc"), {
      registry: "quay.io",
      repository: "quay.io/acme/app",
      tag: "1.0",
      digest: "sha256:abc",
    });
    assert.deepEqual(parseImage("localhost:5000/app"), {
      registry: "localhost:5000",
      repository: "localhost:5000/app",
    });
    assert.equal(parseImage("localhost/app").registry, "localhost");
    assert.equal(parseImage("index.docker.io/library/nginx").repository, "docker.io/library/nginx");
    assert.equal(parseImage("registry.example.com:5000/team/app:v1").registry, "registry.example.com:5000");
  });

  test("get the pull policy kube-apiserver fills in: Always for latest or no tag, else IfNotPresent", () => {
    assert.equal(defaultPullPolicy("nginx"), "Always");
    assert.equal(defaultPullPolicy("nginx:latest"), "Always");
    assert.equal(defaultPullPolicy("nginx:1.27"), "IfNotPresent");
    assert.equal(defaultPullPolicy("nginx@sha256:abc"), "IfNotPresent");
  });
});

describe("allowed registries", () => {
  const rule = { names: ["quay.io/acme", "registry.example.com:5000"], regex: "^docker\\.io/library/" };

  test("a listed registry or path allows what is under it, and the regex the repository", () => {
    assert.equal(registryAllowed(rule, "quay.io/acme/app:1"), true);
    assert.equal(registryAllowed(rule, "quay.io/acme"), true);
    assert.equal(registryAllowed(rule, "quay.io/acme-evil/app"), false, "a path prefix ends at a /");
    assert.equal(registryAllowed(rule, "quay.io/other/app"), false);
    assert.equal(registryAllowed(rule, "registry.example.com:5000/x/y"), true);
    assert.equal(
      registryAllowed(rule, "registry.example.com/x/y"),
      false,
      "another port is another registry",
    );
    assert.equal(registryAllowed(rule, "nginx:1.27"), true);
    assert.equal(registryAllowed(rule, "bitnami/redis"), false);
    assert.equal(registryAllowed(undefined, "anything.example/x"), true, "unset allows any");
    assert.equal(registryAllowed({}, "nginx"), false, "set but empty allows none");
  });

  test("a refusal names the field, the image, its registry and the rule", () => {
    assert.equal(
      registryViolation(
        "spec.containers[0].image",
        "evil.example/miner:1",
        tenant({ containerRegistries: rule }),
      ),
      'spec.containers[0].image: image "evil.example/miner:1" (evil.example/miner, registry "evil.example") is not allowed in tenant "acme" (spec.allowed.containerRegistries: names "quay.io/acme", "registry.example.com:5000" or names matching ^docker\\.io/library/)',
    );
    assert.equal(registryViolation("f", "quay.io/acme/x", tenant({ containerRegistries: rule })), undefined);
  });
});

describe("allowed pull policies", () => {
  test("a policy the API server may have filled in becomes the first allowed one", () => {
    assert.equal(pullPolicyDefault("IfNotPresent", "nginx:1.27", ["Always"]), "Always");
    assert.equal(pullPolicyDefault("Always", "nginx", ["IfNotPresent", "Always"]), undefined, "allowed");
    assert.equal(pullPolicyDefault("Always", "nginx", ["IfNotPresent"]), "IfNotPresent");
    assert.equal(pullPolicyDefault(undefined, "nginx", ["Always"]), "Always");
    assert.equal(pullPolicyDefault("IfNotPresent", "nginx:1.27", undefined), undefined, "no rule");
  });

  test("a policy the author chose is kept, and refused when not allowed", () => {
    assert.equal(pullPolicyDefault("Never", "nginx:1.27", ["Always"]), undefined);
    assert.equal(pullPolicyDefault("IfNotPresent", "nginx", ["Always"]), undefined, "not nginx's default");
    const onlyAlways = tenant({ imagePullPolicies: ["Always"] });
    assert.equal(
      pullPolicyViolation("spec.containers[0].imagePullPolicy", "Never", onlyAlways),
      'spec.containers[0].imagePullPolicy: "Never" is not allowed in tenant "acme" (spec.allowed.imagePullPolicies: Always)',
    );
    assert.equal(pullPolicyViolation("f", "Always", onlyAlways), undefined);
    assert.equal(pullPolicyViolation("f", "Never", tenant({})), undefined);
  });
});
