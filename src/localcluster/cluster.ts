import { existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Node,
} from "@kubernetes/client-node";
import { nodeProgram } from "../common/index.js";
import {
  type AccessWebhooks,
  configureAccessWebhooks,
  configureAdmissionWebhooks,
  type WebhookClient,
} from "./access-webhooks.js";
import type { ComponentBinaries } from "./build.js";
import { clusterNetworkObjects, NETWORK_MANAGER, writeNetworkConfigs } from "./cluster-network.js";
import { type ClientIdentity, type ClusterPki, ensureClusterPki } from "./cluster-pki.js";
import { renderKubeconfig, writeKubeconfig } from "./kubeconfig.js";
import { unmountBelow } from "./mounts.js";
import { assertPortFree, freePort, isPortFree, releasePort } from "./ports.js";
import { PROCESS_NODE_NAME } from "./process-node/constants.js";
import {
  claimNetwork,
  extraHostPortsFile,
  type NetworkPlan,
  plansTakenByRoutes,
  readRecordedNetwork,
  releaseNetwork,
  removeNetwork,
  run,
} from "./process-node/network/index.js";
import { stopRecordedProcesses } from "./process-node/records.js";
import { isRunning, logTail, type RunningProcess, startProcess, stopProcess } from "./processes.js";
import { type ClusterSpec, KWOK_NODE_ANNOTATION, validateClusterSpec, ZONE_LABEL } from "./spec.js";

export interface ClusterPorts {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  kwok: number;
  /** The process node's kubelet API (container logs for kube-apiserver). */
  kubelet: number;
  /** Where tenantry's authentication and authorization webhooks listen, when the spec asks for them. */
  accessWebhooks?: number;
  /** CoreDNS (on 127.0.0.1; pods reach it through the kube-dns Service) and its readiness endpoint. */
  dns?: number;
  dnsReady?: number;
}

/** Written to `<dir>/state.json` as soon as the first process starts, so a crash can be cleaned up. */
export interface ClusterState {
  name: string;
  phase: "starting" | "running";
  spec: ClusterSpec;
  ports: ClusterPorts;
  server: string;
  kubeconfig: string;
  processes: RunningProcess[];
  startedAt: string;
  readyAt?: string;
  /** tenantry's access webhooks this cluster's API server calls (spec.accessWebhooks). */
  accessWebhooks?: AccessWebhooks;
  /**
   * The client certificate kube-apiserver presents to admission webhooks (and the access webhooks),
   * and the CA tenantry trusts it by (`webhookClientCa` of tenantry's options).
   */
  webhookClient?: WebhookClient;
  /** Seconds from start to Ready, per step, for the footprint benchmark and `status`. */
  timings?: Record<string, number>;
}

export interface ClusterStatus {
  name: string;
  state: "running" | "stopped" | "degraded";
  server?: string;
  kubeconfig: string;
  dir: string;
  processes: { component: string; pid: number; alive: boolean; logFile: string }[];
}

/** Components in start order; they are stopped in reverse. */
export const COMPONENT_ORDER = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
  "coredns",
  "process-node",
  "kube-proxy",
  "kube-router",
] as const;

type Component = (typeof COMPONENT_ORDER)[number];

/** The process node's agent, run by this Node.js as tenantry itself runs (compiled, or through tsx). */
const PROCESS_NODE_PROGRAM = nodeProgram("./process-node/main.ts", import.meta.url);

/**
 * Capacity of the process node: room for the runtimes benchmark's hundred pods and more, and local
 * ephemeral storage as a kubelet reports it (pods of tenants with a default ephemeral-storage limit
 * ask for some).
 */
const PROCESS_NODE_CAPACITY = { cpu: "32", memory: "128Gi", pods: "250", "ephemeral-storage": "200Gi" };

/** Starts one component's process and records it in the cluster's state. */
type Launch = (component: Component, binary: string, args: string[]) => Promise<RunningProcess>;

/** One local cluster: its folder holds pki/, etcd/, logs/, kubeconfig and state.json. */
export class LocalCluster {
  readonly dir: string;
  readonly kubeconfigPath: string;
  private readonly stateFile: string;

  constructor(
    readonly spec: ClusterSpec,
    harnessDir: string,
  ) {
    validateClusterSpec(spec);
    this.dir = join(harnessDir, spec.name);
    this.kubeconfigPath = join(this.dir, "kubeconfig");
    this.stateFile = join(this.dir, "state.json");
  }

  get name(): string {
    return this.spec.name;
  }

  async readState(): Promise<ClusterState | undefined> {
    if (!existsSync(this.stateFile)) return undefined;
    try {
      return JSON.parse(await readFile(this.stateFile, "utf8")) as ClusterState;
    } catch {
      return undefined;
    }
  }

  private async writeState(state: ClusterState): Promise<void> {
    await writeFile(this.stateFile, `${JSON.stringify(state, null, 2)}\n`);
  }

  async status(): Promise<ClusterStatus> {
    const state = await this.readState();
    const processes = (state?.processes ?? []).map((p) => ({
      component: p.component,
      pid: p.pid,
      alive: isRunning(p.pid, p.binary),
      logFile: p.logFile,
    }));
    const alive = processes.filter((p) => p.alive).length;
    let clusterState: ClusterStatus["state"] = "stopped";
    if (state && alive > 0) {
      clusterState =
        alive === processes.length && state.phase === "running" && (await this.apiserverReady(state))
          ? "running"
          : "degraded";
    }
    return {
      name: this.name,
      state: clusterState,
      server: state?.server,
      kubeconfig: this.kubeconfigPath,
      dir: this.dir,
      processes,
    };
  }

  /**
   * Starts the cluster and waits until it is usable: API ready, nodes Ready, controllers running.
   * A running cluster is left as it is; leftovers of a crashed start are stopped first. If any
   * step fails, everything started here is stopped again before the error is raised.
   */
  async start(binaries: ComponentBinaries, log: (line: string) => void = () => {}): Promise<ClusterState> {
    const previous = await this.readState();
    if (previous) {
      const status = await this.status();
      if (status.state === "running") return previous;
      const dead = status.processes.filter((p) => !p.alive);
      if (
        previous.phase === "running" &&
        dead.length > 0 &&
        dead.every((p) => p.component === "process-node") &&
        (await this.apiserverReady(previous))
      )
        return this.restartProcessNode(previous, binaries, log);
      if (status.processes.some((p) => p.alive)) {
        log(`${this.name}: cleaning up a half-started cluster left by an earlier run`);
      }
      await this.stopProcesses(previous);
    }
    if (this.spec.apiserverPort !== undefined)
      await assertPortFree(this.spec.apiserverPort, `cluster "${this.name}" kube-apiserver`);

    // A component can lose the race for a port picked moments earlier; start again on new ports.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(binaries, previous?.ports, log);
      } catch (err) {
        if (!(err instanceof PortTakenError) || attempt >= 3) throw err;
        log(`${this.name}: ${err.message}; retrying on other ports`);
      }
    }
  }

  private async pickPorts(previous?: ClusterPorts): Promise<ClusterPorts> {
    const reuse = async (port: number | undefined) =>
      port !== undefined && (await isPortFree(port)) ? port : freePort();
    return {
      etcdClient: await reuse(previous?.etcdClient),
      etcdPeer: await reuse(previous?.etcdPeer),
      apiserver: this.spec.apiserverPort ?? (await reuse(previous?.apiserver)),
      kwok: await reuse(previous?.kwok),
      dns: await reuse(previous?.dns),
      dnsReady: await reuse(previous?.dnsReady),
      kubelet: await reuse(previous?.kubelet),
      ...(this.spec.accessWebhooks ? { accessWebhooks: await reuse(previous?.accessWebhooks) } : {}),
    };
  }

  /** One attempt of `start`: each step in order, timed; if one fails, what it started is stopped again. */
  private async startOnce(
    binaries: ComponentBinaries,
    previousPorts: ClusterPorts | undefined,
    log: (line: string) => void,
  ) {
    const t0 = Date.now();
    const timings: Record<string, number> = {};
    const mark = (step: string) => {
      timings[step] = (Date.now() - t0) / 1000;
    };
    await mkdir(join(this.dir, "logs"), { recursive: true });
    const pki = await ensureClusterPki(join(this.dir, "pki"), this.name);
    const ports = await this.pickPorts(previousPorts);
    const state = this.startingState(ports);
    const launch = (component: Component, binary: string, args: string[]) =>
      this.launch(state, component, binary, args);

    try {
      await this.writeKubeconfigs(pki, state.server);
      const etcd = await this.startEtcd(launch, binaries, ports);
      mark("etcd");
      const apiserver = await this.startApiserver(state, pki, launch, binaries, [etcd]);
      mark("kube-apiserver");

      const components = [
        etcd,
        apiserver,
        await this.startControllerManager(launch, binaries, pki),
        await this.startScheduler(launch, binaries),
        await this.startKwok(launch, binaries, ports),
      ];
      const plan = await this.claimNetwork();
      const configs = await this.preparePodNetwork(state, plan);
      components.push(await launch("coredns", binaries.coredns, ["-conf", configs.corefile]));
      const agentLaunched = Date.now();
      components.push(await this.launchProcessNode(state, binaries, plan));

      const core = this.adminCoreApi(pki, state.server);
      await this.createNodes(core);
      await this.waitForSimulatedNodes(core, components);
      mark("nodes");
      await this.waitForProcessNode(core, components, plan, agentLaunched);
      mark("process-node");
      components.push(...(await this.startNetworkAgents(state, binaries, plan, configs)));
      mark("network");
      await this.waitForControllerManager(core, components);
      mark("controllers");

      await this.recordReady(state, timings, log);
      return state;
    } catch (err) {
      await this.stopProcesses(state);
      for (const port of Object.values(ports)) releasePort(port);
      throw err;
    }
  }

  /** The state of a start that has begun, before any process runs. */
  private startingState(ports: ClusterPorts): ClusterState {
    return {
      name: this.name,
      phase: "starting",
      spec: this.spec,
      ports,
      server: `https://127.0.0.1:${ports.apiserver}`,
      kubeconfig: this.kubeconfigPath,
      processes: [],
      startedAt: new Date().toISOString(),
    };
  }

  /** The administrator's kubeconfig, and one for each component that talks to the API server. */
  private async writeKubeconfigs(pki: ClusterPki, server: string): Promise<void> {
    await writeKubeconfig(this.kubeconfigPath, {
      cluster: this.name,
      server,
      caPem: pki.caPem,
      client: pki.clients.admin,
    });
    for (const identity of [
      "controllerManager",
      "scheduler",
      "kwok",
      "processNode",
      "kubeProxy",
      "coredns",
      "kubeRouter",
    ] as const)
      await this.writeComponentKubeconfig(pki, server, identity);
  }

  private startControllerManager(launch: Launch, binaries: ComponentBinaries, pki: ClusterPki) {
    return launch("kube-controller-manager", binaries.kubeControllerManager, [
      `--kubeconfig=${this.componentKubeconfig("controllerManager")}`,
      "--secure-port=0",
      "--leader-elect=false",
      "--use-service-account-credentials=true",
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      // `*` leaves these two off: they sign cluster-info and delete expired bootstrap tokens.
      "--controllers=*,bootstrapsigner,tokencleaner",
      "--concurrent-gc-syncs=20",
      "--concurrent-namespace-syncs=10",
      // A full quota recount every 15 s bounds how stale ResourceQuota usage can get when an
      // event-driven update is missed under load (the default waits 5 minutes).
      "--resource-quota-sync-period=15s",
      ...(this.spec.extraControllerManagerFlags ?? []),
    ]);
  }

  private startScheduler(launch: Launch, binaries: ComponentBinaries) {
    return launch("kube-scheduler", binaries.kubeScheduler, [
      `--kubeconfig=${this.componentKubeconfig("scheduler")}`,
      "--secure-port=0",
      "--leader-elect=false",
    ]);
  }

  /** kwok, the kubelet of the simulated nodes (those annotated for it). */
  private startKwok(launch: Launch, binaries: ComponentBinaries, ports: ClusterPorts) {
    return launch("kwok", binaries.kwok, [
      `--kubeconfig=${this.componentKubeconfig("kwok")}`,
      `--config=${binaries.kwokStages}`,
      "--manage-all-nodes=false",
      `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
      `--server-address=127.0.0.1:${ports.kwok}`,
      "--node-ip=127.0.0.1",
      "--node-lease-duration-seconds=40",
      "--cidr=10.244.0.1/16",
      "--v=WARN",
    ]);
  }

  /** The pod network's configuration files (CoreDNS, kube-proxy) and its objects in the API. */
  private async preparePodNetwork(state: ClusterState, plan: NetworkPlan) {
    const ports = state.ports;
    const configs = await writeNetworkConfigs(this.dir, {
      plan,
      nodeName: PROCESS_NODE_NAME,
      dnsPort: ports.dns!,
      dnsReadyPort: ports.dnsReady!,
    });
    // Pods reach CoreDNS's port of the machine through the kube-dns Service.
    await writeFile(extraHostPortsFile(this.dir), JSON.stringify([ports.dns]));
    await this.applyNetworkObjects(state, plan);
    return configs;
  }

  private adminCoreApi(pki: ClusterPki, server: string): CoreV1Api {
    const kc = new KubeConfig();
    kc.loadFromString(
      renderKubeconfig({ cluster: this.name, server, caPem: pki.caPem, client: pki.clients.admin }),
    );
    return kc.makeApiClient(CoreV1Api);
  }

  private async waitForSimulatedNodes(core: CoreV1Api, components: RunningProcess[]): Promise<void> {
    await this.waitFor("simulated nodes to become Ready", components, 60_000, async () => {
      const nodes = await core.listNode({ labelSelector: "type=kwok" });
      return nodes.items.length >= (this.spec.nodes ?? 3) && nodes.items.every(isNodeReady);
    });
  }

  private async waitForProcessNode(
    core: CoreV1Api,
    components: RunningProcess[],
    plan: NetworkPlan,
    agentLaunched: number,
  ): Promise<void> {
    // Ready, and by this agent: a Node kept from an earlier start may still look Ready.
    await this.waitFor(
      "the process node to become Ready",
      components,
      120_000,
      async () =>
        isNodeReady(await core.readNode({ name: PROCESS_NODE_NAME })) &&
        existsSync(`/run/netns/${plan.nodeNamespace}`) &&
        (await this.leaseRenewedSince(agentLaunched)),
    );
  }

  private async waitForControllerManager(core: CoreV1Api, components: RunningProcess[]): Promise<void> {
    // The service-account controller runs in kube-controller-manager: once "default" exists, it is working.
    await this.waitFor(
      "kube-controller-manager to create the default service account",
      components,
      60_000,
      async () => {
        await core.readNamespacedServiceAccount({ name: "default", namespace: "default" });
        return true;
      },
    );
  }

  private async recordReady(
    state: ClusterState,
    timings: Record<string, number>,
    log: (line: string) => void,
  ): Promise<void> {
    state.phase = "running";
    state.readyAt = new Date().toISOString();
    state.timings = timings;
    await this.writeState(state);
    log(
      `${this.name}: ready at ${state.server} in ${timings.controllers?.toFixed(1)}s (kubeconfig ${this.kubeconfigPath})`,
    );
  }

  private async startEtcd(launch: Launch, binaries: ComponentBinaries, ports: ClusterPorts) {
    const etcd = await launch("etcd", binaries.etcd, [
      `--name=${this.name}`,
      `--data-dir=${join(this.dir, "etcd")}`,
      `--listen-client-urls=http://127.0.0.1:${ports.etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${ports.etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
      `--initial-cluster=${this.name}=http://127.0.0.1:${ports.etcdPeer}`,
      // Local clusters trade durability for speed: a crash may lose the last writes.
      "--unsafe-no-fsync=true",
      "--quota-backend-bytes=4294967296",
      "--log-level=warn",
    ]);
    await this.waitFor("etcd to answer", [etcd], 30_000, () =>
      httpOk(`http://127.0.0.1:${ports.etcdClient}/health`),
    );
    return etcd;
  }

  /** kube-apiserver with the admission and (when asked for) access webhooks' configuration. */
  private async startApiserver(
    state: ClusterState,
    pki: ClusterPki,
    launch: Launch,
    binaries: ComponentBinaries,
    running: RunningProcess[],
  ) {
    const ports = state.ports;

    const admission = await configureAdmissionWebhooks(pki, join(this.dir, "admission"));
    state.webhookClient = admission.client;
    let authorizationFlags = ["--authorization-mode=Node,RBAC"];
    if (ports.accessWebhooks !== undefined) {
      const access = await configureAccessWebhooks(pki, join(this.dir, "access"), ports.accessWebhooks);
      state.accessWebhooks = access.webhooks;
      authorizationFlags = access.flags;
    }

    const apiserver = await launch("kube-apiserver", binaries.kubeApiserver, [
      `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
      `--secure-port=${ports.apiserver}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      "--service-cluster-ip-range=10.96.0.0/16",
      ...authorizationFlags,
      ...admission.flags,
      "--allow-privileged=true",
      // Worker nodes join the way kubeadm's do: a bootstrap token, then a kubelet client CSR.
      "--enable-bootstrap-token-auth=true",
      // Its own endpoint would be 127.0.0.1, which pods cannot reach: the harness writes the
      // kubernetes Service's EndpointSlice with the node link's address (cluster-network.ts).
      "--endpoint-reconciler-type=none",
      "--profiling=false",
      ...(this.spec.extraApiserverFlags ?? []),
    ]);
    await this.waitFor("kube-apiserver to become ready", [...running, apiserver], 60_000, () =>
      this.apiserverReady(state, pki),
    );
    return apiserver;
  }

  /** Starts a component, `via` a command that execs it (nsenter into a namespace); records it in the state. */
  private async launch(
    state: ClusterState,
    component: Component,
    binary: string,
    args: string[],
    via: string[] = [],
  ) {
    const logFile = join(this.dir, "logs", `${component}.log`);
    await writeFile(logFile, `--- ${new Date().toISOString()} ${[...via, binary, ...args].join(" ")}\n`, {
      flag: "a",
    });
    const started = via.length
      ? startProcess(component, via[0]!, [...via.slice(1), binary, ...args], logFile, this.dir)
      : startProcess(component, binary, args, logFile, this.dir);
    // What runs under that pid once `via` has exec'd it; until then it is `via` (nsenter), which a
    // check of the component's liveness would take for another program.
    const proc = { ...started, binary };
    if (via.length) await execed(proc.pid, binary);
    state.processes.push(proc);
    await this.writeState(state);
    return proc;
  }

  /** The cluster's pod network on this machine: the one it had, or a free one (process-node/network). */
  private async claimNetwork(): Promise<NetworkPlan> {
    return claimNetwork(this.dir, {
      isClusterRunning: clusterRunning,
      taken: await plansTakenByRoutes(),
      removeAbandoned: removeNetwork,
      ...(this.spec.podCidr ? { podCidr: this.spec.podCidr } : {}),
    });
  }

  /** What CoreDNS, kube-proxy and kube-router need in the API (their roles, kube-dns), before they start. */
  private async applyNetworkObjects(state: ClusterState, plan: NetworkPlan): Promise<void> {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    for (const object of clusterNetworkObjects({
      plan,
      dnsPort: state.ports.dns!,
      apiserverPort: state.ports.apiserver,
    }))
      await objects.patch(object, undefined, undefined, NETWORK_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  /**
   * kube-proxy and kube-router in the node's network namespace (made by the process node's agent);
   * waits until kube-proxy has written its rules and CoreDNS answers (see cluster-network.ts).
   */
  private async startNetworkAgents(
    state: ClusterState,
    binaries: ComponentBinaries,
    plan: NetworkPlan,
    configs: { kubeProxyConfig: string },
  ): Promise<RunningProcess[]> {
    const inNode = ["nsenter", `--net=/run/netns/${plan.nodeNamespace}`, "--"];
    const agents = [
      await this.launch(
        state,
        "kube-proxy",
        binaries.kubeProxy,
        [`--config=${configs.kubeProxyConfig}`],
        inNode,
      ),
      await this.launch(
        state,
        "kube-router",
        binaries.kubeRouter,
        [
          `--kubeconfig=${this.componentKubeconfig("kubeRouter")}`,
          `--hostname-override=${PROCESS_NODE_NAME}`,
          "--run-router=false",
          "--run-service-proxy=false",
          "--run-firewall=true",
          "--metrics-port=0",
          "--v=1",
        ],
        inNode,
      ),
    ];
    await this.waitFor("kube-proxy to write its rules", agents, 60_000, async () =>
      (
        await run("nsenter", [`--net=/run/netns/${plan.nodeNamespace}`, "--", "nft", "list", "tables"])
      ).includes("kube-proxy"),
    );
    await this.waitFor("CoreDNS to be ready", agents, 60_000, () =>
      httpOk(`http://127.0.0.1:${state.ports.dnsReady}/ready`),
    );
    return agents;
  }

  /** The process node's agent (see process-node/main.ts), on the cluster's own pod network. */
  private async launchProcessNode(
    state: ClusterState,
    binaries: ComponentBinaries,
    plan: NetworkPlan,
  ): Promise<RunningProcess> {
    return this.launch(state, "process-node", process.execPath, [
      ...PROCESS_NODE_PROGRAM,
      `--cluster=${this.name}`,
      `--cluster-dir=${this.dir}`,
      `--kubeconfig=${this.componentKubeconfig("processNode")}`,
      `--node=${PROCESS_NODE_NAME}`,
      `--network=${plan.index}`,
      `--pod-cidr=${plan.podCidr}`,
      `--kubelet-port=${state.ports.kubelet}`,
      `--kubelet-version=${binaries.versions.kubernetes}`,
      `--capacity=${JSON.stringify(PROCESS_NODE_CAPACITY)}`,
      `--labels=${JSON.stringify(this.spec.labels ?? {})}`,
    ]);
  }

  /**
   * Starts the process node's agent again when it alone has died (a crash, `kill -9`): the rest of
   * the cluster keeps running, and the new agent adopts the processes of the pods that still exist.
   */
  private async restartProcessNode(
    state: ClusterState,
    binaries: ComponentBinaries,
    log: (line: string) => void,
  ) {
    log(`${this.name}: the process node's agent had stopped; starting it again`);
    state.processes = state.processes.filter((p) => p.component !== "process-node");
    const agent = await this.launchProcessNode(state, binaries, await this.claimNetwork());
    const since = Date.now();
    await this.waitFor("the process node's agent to renew its lease", [agent], 120_000, () =>
      this.leaseRenewedSince(since),
    );
    await this.writeState(state);
    return state;
  }

  /** Whether the process node's agent renewed its Lease since `since` (its own, not an earlier agent's). */
  private async leaseRenewedSince(since: number): Promise<boolean> {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    const lease = await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({
      name: PROCESS_NODE_NAME,
      namespace: "kube-node-lease",
    });
    return new Date(lease.spec?.renewTime ?? 0).getTime() >= since - 1000;
  }

  private componentKubeconfig(identity: ClientIdentity): string {
    return join(this.dir, "pki", `${identity}.kubeconfig`);
  }

  private async writeComponentKubeconfig(pki: ClusterPki, server: string, identity: ClientIdentity) {
    await writeKubeconfig(this.componentKubeconfig(identity), {
      cluster: this.name,
      server,
      caPem: pki.caPem,
      client: pki.clients[identity],
    });
  }

  private async createNodes(core: CoreV1Api): Promise<void> {
    const count = this.spec.nodes ?? 3;
    const capacity = this.spec.nodeCapacity ?? {
      cpu: "32",
      memory: "128Gi",
      pods: "110",
      "ephemeral-storage": "200Gi",
    };
    const labels = this.spec.labels ?? {};
    const region = Object.entries(labels).find(([k]) => k.endsWith("/region"))?.[1] ?? this.name;
    for (let i = 0; i < count; i++) {
      const name = `${this.name}-node-${i}`;
      const node: V1Node = {
        metadata: {
          name,
          annotations: { [KWOK_NODE_ANNOTATION]: "fake", "node.alpha.kubernetes.io/ttl": "0" },
          labels: {
            ...labels,
            [ZONE_LABEL]: `${region}-${String.fromCharCode(97 + (i % 3))}`,
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "node-role.kubernetes.io/worker": "",
            type: "kwok",
          },
        },
        status: { allocatable: capacity, capacity },
      };
      try {
        await core.createNode({ body: node });
      } catch (err) {
        if ((err as { code?: number }).code !== 409) throw err;
      }
    }
  }

  private async apiserverReady(state: ClusterState, pki?: ClusterPki): Promise<boolean> {
    const certs = pki ?? (await ensureClusterPki(join(this.dir, "pki"), this.name));
    return httpsOk(`${state.server}/readyz`, certs.caPem, certs.clients.admin);
  }

  /** Polls `check` until true; fails at once, with the log's tail, if a component process exits. */
  private async waitFor(
    what: string,
    watched: RunningProcess[],
    timeoutMs: number,
    check: () => Promise<boolean>,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let lastError = "";
    for (;;) {
      for (const proc of watched) {
        if (!isRunning(proc.pid, proc.binary)) {
          const tail = logTail(proc.logFile);
          if (/address already in use/.test(tail))
            throw new PortTakenError(`${proc.component} found its port taken`);
          throw new Error(
            `${this.name}: ${proc.component} exited while waiting for ${what}; log ${proc.logFile}:\n${tail}`,
          );
        }
      }
      try {
        if (await check()) return;
      } catch (err) {
        lastError = err instanceof Error ? err.message : String(err);
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${this.name}: timed out after ${timeoutMs / 1000}s waiting for ${what}${lastError ? ` (last error: ${lastError})` : ""}; logs in ${join(this.dir, "logs")}`,
        );
      }
      await sleep(200);
    }
  }

  private async stopProcesses(state: ClusterState): Promise<void> {
    const byOrder = [...state.processes].sort(
      (a, b) => COMPONENT_ORDER.indexOf(b.component as never) - COMPONENT_ORDER.indexOf(a.component as never),
    );
    // Clients first, then the API server, then etcd, so nothing logs errors about a vanished server.
    const clients = byOrder.filter((p) => !["kube-apiserver", "etcd"].includes(p.component));
    await Promise.all(clients.map((p) => stopProcess(p)));
    // The process node's agent stops its pods and removes its network; after a crash of the agent
    // they are stopped and removed here.
    await stopRecordedProcesses(this.dir);
    const network = await readRecordedNetwork(this.dir);
    if (network) await removeNetwork(network.index);
    for (const p of byOrder.filter((p) => ["kube-apiserver", "etcd"].includes(p.component)))
      await stopProcess(p);
  }

  /** Stops every process; data stays, so the next start resumes the same cluster. */
  async stop(): Promise<boolean> {
    const state = await this.readState();
    if (!state) return false;
    await this.stopProcesses(state);
    // Volumes loop-mounted in the cluster's folder (tenantry's pooled storage) go with it.
    await unmountBelow(this.dir);
    await rm(this.stateFile, { force: true });
    return true;
  }

  /** Stops the cluster and deletes its data, certificates and logs. */
  async reset(): Promise<void> {
    await this.stop();
    await unmountBelow(this.dir);
    await releaseNetwork(this.dir);
    await rm(this.dir, { recursive: true, force: true });
  }
}

class PortTakenError extends Error {}

/**
 * The CA file of the client certificate the cluster's kube-apiserver presents to webhooks: what
 * tenantry's `webhookClientCa` (`tenantry run --webhook-client-ca`) trusts.
 */
export function webhookClientCaFile(state: ClusterState): string {
  if (!state.webhookClient) {
    throw new Error(
      `cluster "${state.name}" runs without a webhook client certificate (started by an older tenantry): stop it and start it again`,
    );
  }
  return state.webhookClient.caFile;
}

/** Whether the cluster in `dir` runs its process node now (its claim on a pod network is alive). */
async function clusterRunning(dir: string): Promise<boolean> {
  try {
    const state = JSON.parse(await readFile(join(dir, "state.json"), "utf8")) as ClusterState;
    const agent = state.processes.find((p) => p.component === "process-node");
    return agent !== undefined && isRunning(agent.pid, agent.binary);
  } catch {
    return false;
  }
}

/** Waits (up to 30 s) until `pid` runs `binary` or has ended. */
async function execed(pid: number, binary: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    let argv0: string;
    try {
      argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    } catch {
      return;
    }
    if (argv0 === binary || argv0 === "") return;
    await sleep(20);
  }
}

function isNodeReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return response.ok;
  } catch {
    return false;
  }
}

function httpsOk(url: string, caPem: string, client: { certPem: string; keyPem: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { ca: caPem, cert: client.certPem, key: client.keyPem, timeout: 2000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on("error", () => resolve(false));
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
    req.end();
  });
}
