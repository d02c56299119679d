/**
 * The process node's agent, one detached process per local cluster (started by LocalCluster, its
 * pid in the cluster's state.json, its log in logs/process-node.log): registers `process-node-0`
 * and keeps it Ready, runs the pods bound to it as local processes, serves their logs to
 * kube-apiserver, and provisions the cluster's local volumes.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { describeError, loadClusterClient } from "../../kube/index.js";
import { loadCertificateAuthority } from "../../pki/index.js";
import { EventRecorder } from "./events.js";
import { ProcessNodeKubelet } from "./kubelet.js";
import { serveKubeletApi } from "./kubelet-server.js";
import { LocalLoadBalancers } from "./load-balancers.js";
import { hostPortsOf, NodeNetwork, networkPlan } from "./network/index.js";
import { NodeHeartbeat } from "./node.js";
import { LocalVolumeProvisioner } from "./provisioner.js";

const { values } = parseArgs({
  options: {
    cluster: { type: "string" },
    "cluster-dir": { type: "string" },
    kubeconfig: { type: "string" },
    node: { type: "string" },
    "pod-cidr": { type: "string" },
    network: { type: "string" },
    "kubelet-port": { type: "string" },
    "kubelet-version": { type: "string" },
    capacity: { type: "string" },
    labels: { type: "string" },
  },
});

function required(name: keyof typeof values): string {
  const value = values[name];
  if (!value) throw new Error(`--${name} is required`);
  return value;
}

const logger = pino({ level: process.env.TENANTRY_LOG_LEVEL ?? "info", base: { component: "process-node" } });

async function main(): Promise<void> {
  const clusterDir = required("cluster-dir");
  const nodeName = required("node");
  const client = loadClusterClient(required("cluster"), required("kubeconfig"));
  const server = new URL(client.server);
  const capacity = JSON.parse(required("capacity")) as Record<string, string>;
  const kubeletPort = Number(required("kubelet-port"));
  const events = new EventRecorder(client.core, { component: "kubelet", host: nodeName }, logger);

  const apiserverPort = Number(server.port || 443);
  const plan = networkPlan(Number(required("network")), required("pod-cidr"));
  const network = await NodeNetwork.start(plan, () => hostPortsOf(clusterDir, apiserverPort));
  // The node's address is the machine's end of the link: pods reach the node there, as on any node,
  // and kube-apiserver reaches its kubelet API there.
  const hostIP = plan.hostAddress;
  logger.info(
    { podCidr: plan.podCidr, mapped: plan.mappedCidr, directRoute: network.directRoute },
    "pod network ready",
  );
  const loadBalancers = new LocalLoadBalancers(client, plan, logger);
  const provisioner = new LocalVolumeProvisioner(client, clusterDir, events, logger);
  await provisioner.start();
  const kubelet = new ProcessNodeKubelet({
    client,
    clusterDir,
    nodeName,
    podCidr: plan.podCidr,
    network,
    hostIP,
    allocatable: capacity,
    apiserver: { host: server.hostname, port: apiserverPort },
    events,
    logger,
  });
  const pki = join(clusterDir, "pki");
  const ca = await loadCertificateAuthority({
    certPem: await readFile(join(pki, "ca.crt"), "utf8"),
    keyPem: await readFile(join(pki, "ca.key"), "utf8"),
  });
  const api = await serveKubeletApi({
    address: hostIP,
    port: kubeletPort,
    ca,
    nodeName,
    runtime: (namespace, name) => kubelet.runtime(namespace, name),
    logger,
  });
  const heartbeat = new NodeHeartbeat(
    client,
    {
      name: nodeName,
      clusterLabels: JSON.parse(values.labels ?? "{}") as Record<string, string>,
      podCidr: required("pod-cidr"),
      hostIP,
      capacity,
      kubeletVersion: values["kubelet-version"] ?? "v0.0.0",
      kubeletPort,
    },
    logger,
  );
  const node = { kind: "Node" as const, name: nodeName, uid: nodeName };
  events.normal(node, "Starting", "Starting kubelet.");
  await kubelet.start();
  await heartbeat.register();
  heartbeat.start();
  loadBalancers.start();
  events.normal(node, "NodeReady", `Node ${nodeName} status is now: NodeReady`);
  logger.info({ node: nodeName, podCidr: values["pod-cidr"], kubeletPort }, "process node ready");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping: every pod's processes are stopped");
    heartbeat.stop();
    loadBalancers.stop();
    await kubelet.stop({ stopPods: true });
    await network.stop();
    await provisioner.stop();
    events.stop();
    api.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err) => {
  logger.fatal({ error: describeError(err) }, "the process node could not start");
  process.exit(1);
});
