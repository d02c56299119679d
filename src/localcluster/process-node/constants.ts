/**
 * What tests, the demo and benchmarks need to place pods on the process node of a local cluster
 * and to give them images it runs. Product code never imports these: it meets the process node
 * only through ordinary Kubernetes objects (node selectors, tolerations, images).
 */

/** The one node of each local cluster whose pods run as local processes. */
export const PROCESS_NODE_NAME = "process-node-0";

/** Label key on the process node, with the value "true". */
export const PROCESS_NODE_LABEL = "tenantry.dev/process-node";

/**
 * Keeps every pod that does not ask for the process node off it: the taint tenantry reserves for
 * runtimes (RUNTIMES_NODE_TAINT_KEY of src/tenants, which constants.test.ts checks this is), which
 * tenantry admits only on the pods of workloads it applies itself (a tenant's own pod tolerating it
 * is refused), so only RuntimeServices' pods run here in tenant namespaces. Not imported from the
 * tenants capability: the agent would load all of it at every start.
 */
export const PROCESS_NODE_TAINT = {
  key: "runtimes.tenantry.dev/reserved",
  value: "true",
  effect: "NoSchedule",
} as const;

/** Node selector and toleration that put a pod on the process node (e.g. a RuntimeService's spec.pods). */
export const PROCESS_NODE_PLACEMENT = {
  nodeSelector: { [PROCESS_NODE_LABEL]: "true" },
  tolerations: [
    {
      key: PROCESS_NODE_TAINT.key,
      operator: "Equal" as const,
      value: "true",
      effect: PROCESS_NODE_TAINT.effect,
    },
  ],
};

/**
 * The images the process node can run. Any tag of these repositories is accepted; the values here
 * are the ones to use. Anything else waits in ErrImagePull naming these.
 */
export const LOCAL_IMAGES = {
  /** A real Jupyter Server (PyPI jupyter-server, pinned) in a virtualenv installed on first pull. */
  jupyter: "quay.io/jupyter/base-notebook:2025-03-14",
  /** HTTP and WebSocket echo on $PORT (default 8080), as jmalloc/echo-server answers. */
  echo: "docker.io/jmalloc/echo-server:v0.3.7",
  /** tenantry's backup agent (src/backup/agent), run with node: archives a mounted claim to the object store. */
  backupAgent: "ghcr.io/tenantry/backup-agent:0.1.0",
  /** tenantry's runtime agent (src/runtimes/agent), run with node: a runtime pod's sidecar reporting its activity. */
  runtimeAgent: "ghcr.io/tenantry/runtime-agent:0.1.0",
  /**
   * tenantry's network gateway (src/multicluster/network/gateway), run with node: wireguard-go
   * (built from its Go module on first pull) on a TUN device, configured through its UAPI socket.
   */
  networkGateway: "ghcr.io/tenantry/network-gateway:0.1.0",
  /** Sleeps until stopped. */
  pause: "registry.k8s.io/pause:3.10",
  /**
   * `sh` runs this machine's /bin/sh, e.g. the helper pods of rancher's local-path-provisioner:
   * script paths in its arguments are mapped through the mounts, paths inside a script are not.
   */
  busybox: "docker.io/library/busybox:1.36",
} as const;

export type LocalImageKind = keyof typeof LOCAL_IMAGES;

/** The default StorageClass of every local cluster: a directory per claim under the cluster's folder. */
export const LOCAL_STORAGE_CLASS = "tenantry-local";

/** Provisioner name of {@link LOCAL_STORAGE_CLASS}, served by the process node's agent. */
export const LOCAL_PROVISIONER = "tenantry.dev/local-volumes";
