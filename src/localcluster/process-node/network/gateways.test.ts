import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { POD_ROUTES_ANNOTATION, podSysctls, requestedRoutes } from "./gateways.js";
import { networkPlan } from "./plan.js";

const plan = networkPlan(3);

function pod(routes: string | undefined, capabilities: string[] = ["NET_ADMIN"]): V1Pod {
  return {
    metadata: { name: "gw", annotations: routes === undefined ? {} : { [POD_ROUTES_ANNOTATION]: routes } },
    spec: { containers: [{ name: "gw", securityContext: { capabilities: { add: capabilities } } }] },
  };
}

describe("routes through a gateway pod", () => {
  test("a NET_ADMIN pod's prefixes in 10.0.0.0/8 are routed through it", () => {
    assert.deepEqual(requestedRoutes(plan, pod("10.240.1.0/24, 10.241.0.0/16")), [
      "10.240.1.0/24",
      "10.241.0.0/16",
    ]);
    assert.deepEqual(requestedRoutes(plan, pod(undefined)), []);
  });

  test("a pod without NET_ADMIN, the node's own podCIDR, Services or outside addresses are refused", () => {
    assert.throws(() => requestedRoutes(plan, pod("10.240.1.0/24", [])), /only a pod granted NET_ADMIN/);
    assert.throws(() => requestedRoutes(plan, pod("10.200.3.0/25")), /outside the podCIDR 10\.200\.3\.0\/24/);
    assert.throws(() => requestedRoutes(plan, pod("10.96.0.0/12")), /Service range/);
    assert.throws(() => requestedRoutes(plan, pod("0.0.0.0/0")), /must lie in 10\.0\.0\.0\/8/);
    assert.throws(() => requestedRoutes(plan, pod("192.168.1.0/24")), /must lie in 10\.0\.0\.0\/8/);
    assert.throws(() => requestedRoutes(plan, pod("10.240.1.1/24")), /not an IPv4 prefix/);
  });
});

describe("pod sysctls", () => {
  test("ip_forward and per-interface forwarding are set; anything else is refused naming the field", () => {
    const forwarding: V1Pod = {
      spec: { containers: [], securityContext: { sysctls: [{ name: "net.ipv4.ip_forward", value: "1" }] } },
    };
    assert.deepEqual(podSysctls(forwarding), [["net.ipv4.ip_forward", "1"]]);
    const other: V1Pod = {
      spec: {
        containers: [],
        securityContext: { sysctls: [{ name: "kernel.shm_rmid_forced", value: "1" }] },
      },
    };
    assert.throws(
      () => podSysctls(other),
      /spec\.securityContext\.sysctls\[0\]: kernel\.shm_rmid_forced=1 is not allowed/,
    );
    const injected: V1Pod = {
      spec: {
        containers: [],
        securityContext: { sysctls: [{ name: "net.ipv4.ip_forward", value: "1; reboot" }] },
      },
    };
    assert.throws(() => podSysctls(injected), /is not allowed/);
  });
});
