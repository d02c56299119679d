import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { EDGE_1, EDGE_2, REGION, replicatedDeployment } from "../../../testing/replication-fixtures.js";
import { groupNodes } from "./combinations.js";
import { replicaDeployment } from "./replica.js";
import {
  deploymentAvailable,
  lastCondition,
  type ReplicaOutcome,
  type ReplicationReport,
  readyCondition,
  replicationStatus,
  statusShapeChanged,
} from "./status.js";

const [euSouth, usEast] = groupNodes([EDGE_1, EDGE_2], [REGION]).combinations.sort((a, b) =>
  a.values[REGION]!.localeCompare(b.values[REGION]!),
);
const rd = replicatedDeployment();

/** The replica's Deployment as the API server would show it after the deployment controller ran. */
function observed(
  combination = euSouth!,
  available = true,
  { generation = 1, observedGeneration = 1 } = {},
): V1Deployment {
  const d = replicaDeployment(rd, combination);
  return {
    ...d,
    metadata: { ...d.metadata, generation, uid: `uid-${combination.hash}` },
    status: {
      observedGeneration,
      readyReplicas: available ? 2 : 0,
      conditions: [
        {
          type: "Available",
          status: available ? "True" : "False",
          reason: available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
          message: available
            ? "Deployment has minimum availability."
            : "Deployment does not have minimum availability.",
          lastUpdateTime: new Date("2030-01-01T10:00:05Z"),
          lastTransitionTime: new Date("2030-01-01T10:00:05Z"),
        },
        {
          type: "Progressing",
          status: "True",
          reason: "NewReplicaSetAvailable",
          message: "ReplicaSet has successfully progressed.",
          lastUpdateTime: new Date("2030-01-01T10:00:01Z"),
          lastTransitionTime: new Date("2030-01-01T10:00:00Z"),
        },
      ],
    },
  };
}

function outcome(combination = euSouth!, deployment?: V1Deployment, error?: string): ReplicaOutcome {
  return {
    combination,
    name: `web-${combination.hash}`,
    ...(deployment ? { deployment } : {}),
    ...(error ? { error } : {}),
  };
}

function report(extra: Partial<ReplicationReport>): ReplicationReport {
  return {
    generation: 3,
    generationLabels: [REGION],
    selectedNodes: 2,
    unlabelled: [],
    replicas: [],
    obsolete: [],
    ...extra,
  };
}

describe("ReplicatedDeployment status", () => {
  test("a replica is Available only once the deployment controller has seen its current spec", () => {
    assert.equal(deploymentAvailable(observed()), true);
    assert.equal(deploymentAvailable(observed(euSouth, false)), false);
    assert.equal(
      deploymentAvailable(observed(euSouth, true, { generation: 2, observedGeneration: 1 })),
      false,
    );
    assert.equal(deploymentAvailable(undefined), false);
  });

  test("the last condition: Available when all is well, else the most recently updated failing one", () => {
    assert.deepEqual(lastCondition(observed()), {
      type: "Available",
      status: "True",
      reason: "MinimumReplicasAvailable",
      message: "Deployment has minimum availability.",
      lastUpdateTime: "2030-01-01T10:00:05Z",
      lastTransitionTime: "2030-01-01T10:00:05Z",
    });
    assert.equal(lastCondition({ status: {} }), undefined);
    const failing = observed(euSouth, false);
    failing.status!.conditions!.push({
      type: "ReplicaFailure",
      status: "True",
      reason: "FailedCreate",
      message: 'pods "web-1" is forbidden: exceeded quota',
      lastUpdateTime: new Date("2030-01-01T10:00:09Z"),
    });
    assert.equal(lastCondition(failing)?.reason, "FailedCreate");
    failing.status!.conditions![2]!.lastUpdateTime = new Date("2030-01-01T10:00:01Z");
    assert.equal(lastCondition(failing)?.reason, "MinimumReplicasUnavailable");
  });

  test("every replica Available: Ready True, counts, one entry per replica with its combination", () => {
    const status = replicationStatus(
      report({ replicas: [outcome(usEast, observed(usEast)), outcome(euSouth, observed(euSouth))] }),
      undefined,
      new Date("2030-01-01T10:01:00Z"),
    );
    assert.equal(status.observedGeneration, 3);
    assert.equal(status.deploymentCount, 2);
    assert.equal(status.availableDeploymentCount, 2);
    const [ready] = status.conditions!;
    assert.deepEqual(
      { ...ready, lastTransitionTime: undefined },
      {
        type: "Ready",
        status: "True",
        reason: "AllReplicasAvailable",
        message: "2 replica(s) Available",
        observedGeneration: 3,
        lastTransitionTime: undefined,
      },
    );
    const names = status.deployments!.map((d) => d.name);
    assert.deepEqual(names, [...names].sort());
    const eu = status.deployments!.find((d) => d.name === `web-${euSouth!.hash}`)!;
    assert.deepEqual(eu.generationLabelsValues, { [REGION]: "eu-south" });
    assert.deepEqual(eu.virtualNodes, ["tenantry-edge-1"]);
    assert.equal(eu.readyReplicas, 2);
    assert.equal(eu.replicas, 2);
    assert.equal(eu.available, true);
    assert.equal(eu.lastCondition?.reason, "MinimumReplicasAvailable");
  });

  test("the transition time stays while Ready keeps its status", () => {
    const first = replicationStatus(
      report({ replicas: [outcome(euSouth, observed())] }),
      undefined,
      new Date("2030-01-01T10:01:00Z"),
    );
    const second = replicationStatus(
      report({ replicas: [outcome(euSouth, observed())] }),
      first.conditions,
      new Date("2030-01-01T10:05:00Z"),
    );
    assert.equal(second.conditions![0]!.lastTransitionTime, "2030-01-01T10:01:00Z");
  });

  test("why not Ready: blocked, no cluster, nodes without the label, a failed replica, replicas not yet Available", () => {
    const reason = (r: Partial<ReplicationReport>) => {
      const c = readyCondition(report(r));
      return `${c.status} ${c.reason}: ${c.message}`;
    };
    assert.equal(
      reason({ blocked: { reason: "LocalOnlyOffloading", message: "Local" } }),
      "False LocalOnlyOffloading: Local",
    );
    assert.equal(
      reason({ selectedNodes: 0 }),
      "False NoClusterSelected: no virtual node matches the NamespaceOffloading's clusterSelector and selectedClusters",
    );
    assert.equal(
      reason({ selectedNodes: 1, unlabelled: ["tenantry-bare"] }),
      `False NoClusterSelected: 1 selected virtual node(s) lack a generation label (${REGION}) and get no replica: tenantry-bare`,
    );
    assert.match(
      reason({ replicas: [outcome(euSouth, observed()), outcome(usEast, undefined, "quota exceeded")] }),
      new RegExp(`^False ReplicaFailed: web-${usEast!.hash} \\(${REGION}=us-east\\): quota exceeded$`),
    );
    assert.match(
      reason({ replicas: [outcome(euSouth, observed()), outcome(usEast, observed(usEast, false))] }),
      /^False ReplicasNotAvailable: 1 of 2 replica\(s\) Available; waiting for web-\w+ \(.*=us-east\): Deployment does not have minimum availability\.$/,
    );
    assert.match(
      reason({ replicas: [outcome(euSouth, observed())], unlabelled: ["tenantry-bare"] }),
      /^True AllReplicasAvailable: 1 replica\(s\) Available; 1 selected virtual node\(s\) lack/,
    );
  });

  test("obsolete replicas are listed as such, with the combination recorded on them, and named in the message", () => {
    const old = observed(usEast);
    const status = replicationStatus(
      report({ replicas: [outcome(euSouth, observed(euSouth, false))], obsolete: [old] }),
      undefined,
      new Date(),
    );
    assert.equal(status.deploymentCount, 1);
    assert.equal(status.availableDeploymentCount, 0);
    const entry = status.deployments!.find((d) => d.obsolete)!;
    assert.equal(entry.name, old.metadata!.name);
    assert.deepEqual(entry.generationLabelsValues, { [REGION]: "us-east" });
    assert.equal(entry.available, true);
    assert.match(
      status.conditions![0]!.message,
      new RegExp(
        `keeping 1 obsolete replica\\(s\\) until every current one is Available: ${old.metadata!.name}`,
      ),
    );
  });

  test("a failed delete of an obsolete replica is reported on it", () => {
    const old = observed(usEast);
    const status = replicationStatus(
      report({
        replicas: [outcome(euSouth, observed())],
        obsolete: [old],
        deleteErrors: { [old.metadata!.name!]: "forbidden" },
      }),
      undefined,
      new Date(),
    );
    assert.equal(status.deployments!.find((d) => d.obsolete)!.error, "forbidden");
    assert.match(status.conditions![0]!.message, /^deleting obsolete web-\w+: forbidden/);
  });

  test("a replica becoming Available changes the status but not its shape; a new replica, an error or Ready's reason do", () => {
    const now = new Date();
    const starting = replicationStatus(
      report({ replicas: [outcome(euSouth, observed(euSouth, false)), outcome(usEast, observed(usEast))] }),
      undefined,
      now,
    );
    const oneMore = replicationStatus(
      report({
        replicas: [outcome(euSouth, observed(euSouth, false)), outcome(usEast, observed(usEast, false))],
      }),
      starting.conditions,
      now,
    );
    assert.notDeepEqual(oneMore, starting);
    assert.equal(statusShapeChanged(starting, oneMore), false);
    const allReady = replicationStatus(
      report({ replicas: [outcome(euSouth, observed(euSouth)), outcome(usEast, observed(usEast))] }),
      starting.conditions,
      now,
    );
    assert.equal(statusShapeChanged(starting, allReady), true, "Ready becomes True");
    const failed = replicationStatus(
      report({
        replicas: [outcome(euSouth, observed(euSouth, false)), outcome(usEast, undefined, "forbidden")],
      }),
      starting.conditions,
      now,
    );
    assert.equal(statusShapeChanged(starting, failed), true);
    const fewer = replicationStatus(
      report({ replicas: [outcome(euSouth, observed(euSouth, false))] }),
      starting.conditions,
      now,
    );
    assert.equal(statusShapeChanged(starting, fewer), true);
  });
});
