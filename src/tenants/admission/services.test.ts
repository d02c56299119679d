import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tenant } from "../api/tenant.js";
import { type Service, serviceViolations } from "./services.js";

function tenant(allowed: NonNullable<Tenant["spec"]["allowed"]> = {}): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name: "acme" },
    spec: { owners: [{ kind: "User", name: "alice" }], allowed },
  } as Tenant;
}

const service = (type?: string, externalIPs?: string[]): Service => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "s" },
  spec: { ...(type ? { type } : {}), ...(externalIPs ? { externalIPs } : {}) },
});

test("ClusterIP always; NodePort, LoadBalancer and ExternalName only when allowed", () => {
  assert.deepEqual(serviceViolations(service(), undefined, tenant()), []);
  assert.deepEqual(serviceViolations(service("ClusterIP"), undefined, tenant()), []);
  for (const type of ["NodePort", "LoadBalancer", "ExternalName"]) {
    assert.deepEqual(serviceViolations(service(type), undefined, tenant()), [
      `spec.type: ${type} services are not allowed in tenant "acme" (spec.allowed.serviceTypes: ClusterIP)`,
    ]);
  }
  const open = tenant({ serviceTypes: ["ClusterIP", "NodePort"] });
  assert.deepEqual(serviceViolations(service("NodePort"), undefined, open), []);
  assert.deepEqual(serviceViolations(service("LoadBalancer"), undefined, open), [
    'spec.type: LoadBalancer services are not allowed in tenant "acme" (spec.allowed.serviceTypes: ClusterIP, NodePort)',
  ]);
});

test("external IPs only when allowed; an update is judged on what it adds", () => {
  assert.deepEqual(serviceViolations(service(undefined, ["1.2.3.4"]), undefined, tenant()), [
    'spec.externalIPs: external IPs are not allowed in tenant "acme" (spec.allowed.externalIPs is false)',
  ]);
  assert.deepEqual(
    serviceViolations(service(undefined, ["1.2.3.4"]), undefined, tenant({ externalIPs: true })),
    [],
  );
  const existing = service("NodePort", ["1.2.3.4"]);
  assert.deepEqual(serviceViolations(existing, existing, tenant()), []);
  assert.deepEqual(serviceViolations(service("NodePort", ["1.2.3.4", "5.6.7.8"]), existing, tenant()), [
    'spec.externalIPs: external IPs are not allowed in tenant "acme" (spec.allowed.externalIPs is false)',
  ]);
  assert.deepEqual(serviceViolations(service("LoadBalancer"), service("ClusterIP"), tenant()), [
    'spec.type: LoadBalancer services are not allowed in tenant "acme" (spec.allowed.serviceTypes: ClusterIP)',
  ]);
});
