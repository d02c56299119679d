import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1EndpointSlice, V1Service, V1ServiceSpec } from "@kubernetes/client-node";
import { MCS_SERVICE_NAME_LABEL, MCS_SOURCE_CLUSTER_LABEL } from "../api/mcs.js";
import { unmappedAddresses } from "./addresses.js";
import {
  type ClusterExport,
  derivedService,
  derivedServiceName,
  importedSlices,
  planExports,
} from "./plan.js";

function service(spec: V1ServiceSpec): V1Service {
  return { metadata: { name: "web", namespace: "ns" }, spec };
}

function slice(name: string, addresses: string[]): V1EndpointSlice {
  return {
    metadata: { name, namespace: "ns", labels: { "kubernetes.io/service-name": "web" } },
    addressType: "IPv4",
    endpoints: addresses.map((a) => ({
      addresses: [a],
      conditions: { ready: true },
      nodeName: "node-1",
      targetRef: { kind: "Pod", name: "p" },
    })),
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  };
}

function exported(
  cluster: string,
  created: string,
  svc?: V1Service,
  slices: V1EndpointSlice[] = [],
): ClusterExport {
  return {
    cluster,
    export: { metadata: { name: "web", namespace: "ns", creationTimestamp: created as never } },
    service: svc,
    slices,
  };
}

const HTTP = { name: "http", port: 80, protocol: "TCP", targetPort: 8080 as never };

function condition(plan: ReturnType<typeof planExports>, cluster: string, type: string) {
  return plan.conditions.get(cluster)?.find((c) => c.type === type);
}

describe("planExports", () => {
  test("one export: a ClusterSetIP import with its ports; Valid, Ready and no conflict", () => {
    const plan = planExports([exported("home", "2026-01-01T00:00:00Z", service({ ports: [HTTP] }))]);
    assert.deepEqual(plan.spec, {
      type: "ClusterSetIP",
      ports: [{ name: "http", protocol: "TCP", port: 80 }],
    });
    assert.equal(condition(plan, "home", "Valid")?.status, "True");
    assert.equal(condition(plan, "home", "Ready")?.reason, "Exported");
    assert.equal(condition(plan, "home", "Conflict")?.status, "False");
  });

  test("no Service, or an ExternalName one: Valid=False, nothing imported", () => {
    const plan = planExports([
      exported("home", "2026-01-01T00:00:00Z"),
      exported(
        "edge-1",
        "2026-01-01T00:00:01Z",
        service({ type: "ExternalName", externalName: "x.example" }),
      ),
    ]);
    assert.equal(plan.spec, undefined);
    assert.equal(condition(plan, "home", "Valid")?.reason, "NoService");
    assert.equal(condition(plan, "edge-1", "Valid")?.reason, "InvalidServiceType");
    assert.equal(condition(plan, "edge-1", "Ready")?.status, "False");
  });

  test("type conflict: the oldest export's type wins, the newer one is reported and contributes nothing", () => {
    const plan = planExports([
      exported("edge-1", "2026-01-01T00:00:05Z", service({ clusterIP: "None", ports: [HTTP] })),
      exported("home", "2026-01-01T00:00:00Z", service({ ports: [HTTP] })),
    ]);
    assert.equal(plan.spec?.type, "ClusterSetIP");
    assert.deepEqual(
      plan.contributing.map((e) => e.cluster),
      ["home"],
    );
    const conflict = condition(plan, "edge-1", "Conflict");
    assert.equal(conflict?.status, "True");
    assert.equal(conflict?.reason, "TypeConflict");
    assert.match(conflict?.message ?? "", /cluster home/);
    assert.equal(condition(plan, "edge-1", "Ready")?.status, "False");
    assert.equal(condition(plan, "home", "Conflict")?.status, "False");
  });

  test("ports: the union; a port name defined differently keeps the oldest definition and is reported", () => {
    const plan = planExports([
      exported("home", "2026-01-01T00:00:00Z", service({ ports: [HTTP] })),
      exported(
        "edge-1",
        "2026-01-01T00:00:01Z",
        service({
          ports: [
            { ...HTTP, port: 81 },
            { name: "metrics", port: 9090, protocol: "TCP" },
          ],
        }),
      ),
    ]);
    assert.deepEqual(plan.spec?.ports, [
      { name: "http", protocol: "TCP", port: 80 },
      { name: "metrics", protocol: "TCP", port: 9090 },
    ]);
    assert.equal(condition(plan, "edge-1", "Conflict")?.reason, "PortConflict");
    assert.match(condition(plan, "edge-1", "Conflict")?.message ?? "", /port http/);
    assert.deepEqual(plan.contributing.map((e) => e.cluster).sort(), ["edge-1", "home"]);
  });

  test("same creation time: the cluster name decides, so every controller agrees", () => {
    const at = "2026-01-01T00:00:00Z";
    const plan = planExports([
      exported("edge-2", at, service({ clusterIP: "None", ports: [HTTP] })),
      exported("edge-1", at, service({ ports: [HTTP] })),
    ]);
    assert.equal(plan.spec?.type, "ClusterSetIP");
    assert.equal(condition(plan, "edge-2", "Conflict")?.reason, "TypeConflict");
  });
});

describe("importedSlices", () => {
  const plan = planExports([
    exported("home", "2026-01-01T00:00:00Z", service({ ports: [HTTP] }), [slice("web-abc", ["10.244.0.5"])]),
    exported("edge-1", "2026-01-01T00:00:01Z", service({ ports: [HTTP] }), [
      slice("web-def", ["10.244.0.9"]),
    ]),
  ]);

  test("one slice per source slice, labelled with the service and source cluster, for the derived Service", () => {
    const slices = importedSlices({
      importName: "web",
      namespace: "ns-remote",
      importer: "edge-2",
      contributing: plan.contributing,
      type: "ClusterSetIP",
      mapAddress: unmappedAddresses,
    });
    assert.equal(slices.length, 2);
    const [home] = slices;
    assert.equal(home?.metadata?.namespace, "ns-remote");
    assert.equal(home?.metadata?.labels?.[MCS_SERVICE_NAME_LABEL], "web");
    assert.equal(home?.metadata?.labels?.[MCS_SOURCE_CLUSTER_LABEL], "home");
    assert.equal(home?.metadata?.labels?.["kubernetes.io/service-name"], derivedServiceName("web"));
    assert.deepEqual(home?.endpoints, [{ addresses: ["10.244.0.5"], conditions: { ready: true } }]);
    assert.deepEqual(home?.ports, [{ name: "http", port: 8080, protocol: "TCP" }]);
    assert.notEqual(slices[0]?.metadata?.name, slices[1]?.metadata?.name);
  });

  test("addresses go through the mapper: remapped per source and importer, or dropped when unreachable", () => {
    const seen: string[] = [];
    const slices = importedSlices({
      importName: "web",
      namespace: "ns",
      importer: "edge-2",
      contributing: plan.contributing,
      type: "Headless",
      mapAddress: (address, { from, to }) => {
        seen.push(`${from}->${to}`);
        return from === "home" ? address.replace("10.244.", "10.250.") : undefined;
      },
    });
    assert.deepEqual(seen.sort(), ["edge-1->edge-2", "home->edge-2"]);
    assert.deepEqual(slices[0]?.endpoints?.[0]?.addresses, ["10.250.0.5"]);
    assert.deepEqual(slices[1]?.endpoints, []);
    assert.equal(
      slices[0]?.metadata?.labels?.["kubernetes.io/service-name"],
      undefined,
      "headless: no derived Service",
    );
  });

  test("the derived Service is selector-less, owned by the import, with the import's ports", () => {
    const derived = derivedService({
      importName: "web",
      namespace: "ns",
      spec: plan.spec!,
      owner: { uid: "u-1" },
    });
    assert.equal(derived.spec?.selector, undefined);
    assert.equal(derived.metadata?.ownerReferences?.[0]?.uid, "u-1");
    assert.equal(derived.metadata?.ownerReferences?.[0]?.kind, "ServiceImport");
    assert.deepEqual(derived.spec?.ports, [{ name: "http", port: 80, protocol: "TCP" }]);
    assert.ok(derivedServiceName("web").length <= 63);
    assert.ok(derivedServiceName("x".repeat(63)).length <= 63);
  });
});
