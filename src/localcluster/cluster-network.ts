import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { SERVICE_IMPORT_CRD } from "../multicluster/index.js";
import { CLUSTER_DOMAIN, DNS_SERVICE_IP, type NetworkPlan } from "./process-node/network/index.js";

/**
 * Services, DNS and NetworkPolicy of a local cluster, as its nodes' agents give them to a real
 * cluster, for the process node's pod network (process-node/network/plan.ts):
 *
 * - kube-proxy (nftables mode) in the node's network namespace, where pods' packets are routed,
 *   as `system:kube-proxy` (the built-in system:node-proxier role);
 * - CoreDNS on the machine's 127.0.0.1 (it needs only the API server), behind the Service
 *   kube-system/kube-dns (10.96.0.10): its EndpointSlice names the link address of the node's
 *   network, where the pods' DNS packets arrive and are passed to CoreDNS's port;
 * - the `kubernetes` Service's EndpointSlice, the API server at the same link address (the API
 *   server itself keeps none here), so in-cluster clients that dial 10.96.0.1 reach it;
 * - kube-router's NetworkPolicy controller (iptables and ipset) in the node's namespace.
 */

/** Field manager of what the harness writes to a cluster for its network. */
export const NETWORK_MANAGER = "tenantry-harness";
const MANAGED_BY = { "endpointslice.kubernetes.io/managed-by": "tenantry-harness" };

export function kubeProxyConfig(options: {
  kubeconfig: string;
  nodeName: string;
  plan: NetworkPlan;
}): string {
  return stringify({
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    clientConnection: { kubeconfig: options.kubeconfig, qps: 50, burst: 100 },
    hostnameOverride: options.nodeName,
    mode: "nftables",
    clusterCIDR: options.plan.podCidr,
    detectLocalMode: "ClusterCIDR",
    // The node's own namespace: its ports are its own, nothing of the machine's is taken.
    healthzBindAddress: "127.0.0.1:10256",
    metricsBindAddress: "127.0.0.1:10249",
    // Conntrack's table size is the machine's, not the namespace's: left as it is.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
    // Changes appear within a second (the default waits a second and at most 30 s between syncs).
    nftables: { syncPeriod: "30s", minSyncPeriod: "0s" },
  });
}

/**
 * The Multi-Cluster Services zone: CoreDNS's `kubernetes` plugin (v1.15.0 as built here) answers
 * `<svc>.<ns>.svc.clusterset.local` from ServiceImports and the EndpointSlices labelled
 * `multicluster.kubernetes.io/service-name` (its `multicluster` option, mcs-api v0.5.2's
 * v1alpha1 client). CoreDNS is ready only once that informer has listed, so the harness installs
 * the ServiceImport CRD with the network's objects, before CoreDNS starts, as an operator installs
 * the MCS CRDs before turning the zone on; tenantry applies the same definition when it starts.
 */
export const CLUSTERSET_DOMAIN = "clusterset.local";

export function corefile(options: { port: number; readyPort: number; kubeconfig: string }): string {
  return `.:${options.port} {
    bind 127.0.0.1
    errors
    ready 127.0.0.1:${options.readyPort}
    kubernetes ${CLUSTER_DOMAIN} ${CLUSTERSET_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${options.kubeconfig}
        pods insecure
        multicluster ${CLUSTERSET_DOMAIN}
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5 {
        disable denial
    }
    loadbalance
}
`;
}

export async function writeNetworkConfigs(
  dir: string,
  options: { plan: NetworkPlan; nodeName: string; dnsPort: number; dnsReadyPort: number },
): Promise<{ kubeProxyConfig: string; corefile: string }> {
  const files = { kubeProxyConfig: join(dir, "kube-proxy.yaml"), corefile: join(dir, "Corefile") };
  await writeFile(
    files.kubeProxyConfig,
    kubeProxyConfig({
      kubeconfig: join(dir, "pki", "kubeProxy.kubeconfig"),
      nodeName: options.nodeName,
      plan: options.plan,
    }),
  );
  await writeFile(
    files.corefile,
    corefile({
      port: options.dnsPort,
      readyPort: options.dnsReadyPort,
      kubeconfig: join(dir, "pki", "coredns.kubeconfig"),
    }),
  );
  return files;
}

function readOnlyRole(
  name: string,
  rules: { apiGroups: string[]; resources: string[] }[],
): KubernetesObject[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name },
      rules: rules.map((r) => ({ ...r, verbs: ["get", "list", "watch"] })),
    } as KubernetesObject,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name }],
    } as KubernetesObject,
  ];
}

/** The objects the cluster's network needs: roles of CoreDNS and kube-router, kube-dns, the API server's endpoints, the ServiceImport CRD. */
export function clusterNetworkObjects(options: {
  plan: NetworkPlan;
  dnsPort: number;
  apiserverPort: number;
}): KubernetesObject[] {
  const { plan } = options;
  const slice = (namespace: string, service: string, ports: object[]) =>
    ({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: `${service}-harness`,
        namespace,
        labels: { "kubernetes.io/service-name": service, ...MANAGED_BY },
      },
      addressType: "IPv4",
      endpoints: [{ addresses: [plan.hostAddress], conditions: { ready: true } }],
      ports,
    }) as KubernetesObject;
  return [
    SERVICE_IMPORT_CRD as unknown as KubernetesObject,
    ...readOnlyRole("system:coredns", [
      { apiGroups: [""], resources: ["services", "pods", "namespaces"] },
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"] },
      { apiGroups: ["multicluster.x-k8s.io"], resources: ["serviceimports"] },
    ]),
    ...readOnlyRole("system:kube-router", [
      { apiGroups: [""], resources: ["namespaces", "pods", "services", "nodes", "endpoints"] },
      { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"] },
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"] },
    ]),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "kube-dns",
        namespace: "kube-system",
        labels: { "k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS" },
      },
      spec: {
        clusterIP: DNS_SERVICE_IP,
        ports: [
          { name: "dns", port: 53, protocol: "UDP", targetPort: options.dnsPort },
          { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: options.dnsPort },
        ],
      },
    } as KubernetesObject,
    slice("kube-system", "kube-dns", [
      { name: "dns", port: options.dnsPort, protocol: "UDP" },
      { name: "dns-tcp", port: options.dnsPort, protocol: "TCP" },
    ]),
    slice("default", "kubernetes", [{ name: "https", port: options.apiserverPort, protocol: "TCP" }]),
  ];
}
