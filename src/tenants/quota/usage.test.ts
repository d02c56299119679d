import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { toResourceList } from "../../common/index.js";
import { matchesScopes, objectUsage, podUsage } from "./usage.js";

const pod = (spec: Partial<NonNullable<V1Pod["spec"]>>, phase?: string): V1Pod => ({
  spec: { containers: [], ...spec },
  ...(phase ? { status: { phase } } : {}),
});
const pods = { group: "", resource: "pods" };

test("pod usage sums containers, takes the larger init container, adds overhead", () => {
  const usage = podUsage(
    pod({
      containers: [
        { name: "a", resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { cpu: "200m" } } },
        { name: "b", resources: { requests: { cpu: "150m", "dummy/dummyResource": "2" } } },
      ],
      initContainers: [{ name: "init", resources: { requests: { cpu: "1", memory: "32Mi" } } }],
      overhead: { cpu: "10m" },
    }),
  );
  assert.deepEqual(toResourceList(usage), {
    "count/pods": "1",
    cpu: "1010m",
    "limits.cpu": "210m",
    memory: "64Mi",
    pods: "1",
    "requests.cpu": "1010m",
    "requests.dummy/dummyResource": "2",
    "requests.memory": "64Mi",
  });
});

test("finished pods count for nothing", () => {
  assert.equal(podUsage(pod({ containers: [{ name: "a" }] }, "Succeeded")).size, 0);
});

test("services count node ports and load balancers; other kinds count as count/<resource>.<group>", () => {
  assert.deepEqual(
    toResourceList(
      objectUsage(
        { group: "", resource: "services" },
        { spec: { type: "NodePort", ports: [{ port: 1 }, { port: 2 }] } },
      ),
    ),
    { "count/services": "1", services: "1", "services.nodeports": "2" },
  );
  assert.deepEqual(toResourceList(objectUsage({ group: "apps", resource: "deployments" }, {})), {
    "count/deployments.apps": "1",
  });
  assert.deepEqual(toResourceList(objectUsage({ group: "", resource: "configmaps" }, {})), {
    configmaps: "1",
    "count/configmaps": "1",
  });
});

test("scopes narrow pods exactly like ResourceQuota scopes", () => {
  const bestEffort = pod({ containers: [{ name: "a" }] });
  const burstable = pod({
    containers: [{ name: "a", resources: { requests: { cpu: "1" } } }],
    priorityClassName: "common",
  });
  assert.ok(matchesScopes(pods, bestEffort, ["BestEffort"]));
  assert.ok(!matchesScopes(pods, burstable, ["BestEffort"]));
  assert.ok(matchesScopes(pods, burstable, ["NotBestEffort", "NotTerminating"]));
  const selector = { matchExpressions: [{ scopeName: "PriorityClass", operator: "In", values: ["common"] }] };
  assert.ok(matchesScopes(pods, burstable, [], selector));
  assert.ok(!matchesScopes(pods, bestEffort, [], selector));
  assert.ok(
    !matchesScopes({ group: "", resource: "configmaps" }, {}, ["BestEffort"]),
    "scoped quotas count only pods",
  );
  assert.ok(matchesScopes({ group: "", resource: "configmaps" }, {}), "unscoped quotas count everything");
});

test("native sidecars count as kube-apiserver's ResourceQuota counts them: beside the containers, and under every later init step", () => {
  const cpu = (value: string) => ({ requests: { cpu: value, memory: "10Mi" } });
  const usage = podUsage(
    pod({
      initContainers: [
        { name: "setup", resources: cpu("100m") },
        { name: "proxy", restartPolicy: "Always", resources: cpu("50m") },
        { name: "migrate", resources: cpu("500m") },
      ],
      containers: [{ name: "app", resources: cpu("100m") }],
    }),
  );
  // max(app 100m + proxy 50m, migrate 500m + proxy 50m, setup 100m) = 550m.
  assert.equal(toResourceList(usage)["requests.cpu"], "550m");
  // memory: app 10Mi + proxy 10Mi = 20Mi beats any init step (at most 10Mi + 10Mi).
  assert.equal(toResourceList(usage)["requests.memory"], "20Mi");

  const sidecarOnly = podUsage(
    pod({
      initContainers: [{ name: "proxy", restartPolicy: "Always", resources: cpu("300m") }],
      containers: [{ name: "app", resources: cpu("100m") }],
    }),
  );
  assert.equal(toResourceList(sidecarOnly)["requests.cpu"], "400m", "a sidecar adds to the containers");
});
