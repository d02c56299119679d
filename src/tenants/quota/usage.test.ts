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
