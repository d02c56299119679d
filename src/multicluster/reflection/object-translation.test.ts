import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ConfigMap, V1Secret, V1Service } from "@kubernetes/client-node";
import { isReflected, reflectedCopy, remoteServiceSpec } from "./object-translation.js";

const target = { remoteNamespace: "shop-home", originClusterId: "home-id" };
const origin = {
  "offloading.tenantry.dev/origin-cluster-id": "home-id",
  "offloading.tenantry.dev/origin-namespace": "shop",
};

describe("reflectedCopy", () => {
  test("a ConfigMap keeps its data and labels, gains the origin labels, loses server fields", () => {
    const local: V1ConfigMap = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "settings",
        namespace: "shop",
        uid: "u",
        resourceVersion: "12",
        labels: { app: "web" },
        annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}", team: "a" },
        managedFields: [],
      },
      data: { mode: "fast" },
      binaryData: { logo: "AAE=" },
    };
    assert.deepEqual(reflectedCopy("ConfigMap", local, target), {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "settings",
        namespace: "shop-home",
        labels: { app: "web", ...origin },
        annotations: { team: "a" },
      },
      data: { mode: "fast" },
      binaryData: { logo: "AAE=" },
    });
  });

  test("a Secret keeps its type and data", () => {
    const local: V1Secret = {
      metadata: { name: "db", namespace: "shop" },
      type: "Opaque",
      data: { password: "c2VjcmV0" },
      immutable: true,
    };
    assert.deepEqual(reflectedCopy("Secret", local, target), {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db", namespace: "shop-home", labels: origin },
      type: "Opaque",
      data: { password: "c2VjcmV0" },
      immutable: true,
    });
  });

  test("kube-root-ca.crt, service-account tokens, the kubernetes Service and objects being deleted are not reflected", () => {
    assert.equal(
      reflectedCopy("ConfigMap", { metadata: { name: "kube-root-ca.crt", namespace: "shop" } }, target),
      undefined,
    );
    const token: V1Secret = {
      metadata: { name: "t", namespace: "shop" },
      type: "kubernetes.io/service-account-token",
    };
    assert.equal(reflectedCopy("Secret", token, target), undefined);
    assert.equal(isReflected("Service", { metadata: { name: "kubernetes", namespace: "default" } }), false);
    assert.equal(isReflected("Service", { metadata: { name: "kubernetes", namespace: "shop" } }), true);
    const deleting = { metadata: { name: "x", namespace: "shop", deletionTimestamp: new Date() } };
    assert.equal(isReflected("ConfigMap", deleting), false);
  });
});

describe("remoteServiceSpec", () => {
  test("a LoadBalancer becomes a ClusterIP without the consumer's addresses and node ports", () => {
    const spec: V1Service["spec"] = {
      type: "LoadBalancer",
      clusterIP: "10.96.0.12",
      clusterIPs: ["10.96.0.12"],
      ipFamilies: ["IPv4"],
      ipFamilyPolicy: "SingleStack",
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 31000,
      allocateLoadBalancerNodePorts: true,
      selector: { app: "web" },
      sessionAffinity: "None",
      internalTrafficPolicy: "Cluster",
      ports: [{ name: "http", port: 80, targetPort: 8080 as never, protocol: "TCP", nodePort: 30080 }],
    };
    assert.deepEqual(remoteServiceSpec(spec!), {
      type: "ClusterIP",
      selector: { app: "web" },
      sessionAffinity: "None",
      internalTrafficPolicy: "Cluster",
      ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
    });
  });

  test("headless stays headless, ExternalName stays ExternalName", () => {
    assert.deepEqual(remoteServiceSpec({ clusterIP: "None", selector: { app: "db" } }), {
      type: "ClusterIP",
      clusterIP: "None",
      selector: { app: "db" },
    });
    assert.deepEqual(
      remoteServiceSpec({
        type: "ExternalName",
        externalName: "db.example.com",
        internalTrafficPolicy: "Cluster",
      }),
      { type: "ExternalName", externalName: "db.example.com" },
    );
  });
});

test("a derived Service of a ServiceImport is not reflected: each cluster derives its own", () => {
  const derived = {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "web-mcs-0123456789",
      namespace: "shop",
      labels: { "multicluster.tenantry.dev/service-import": "web" },
    },
    spec: { ports: [{ port: 80 }] },
  };
  assert.equal(isReflected("Service", derived), false);
});
