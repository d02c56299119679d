import type {
  KubernetesObject,
  V1ConfigMap,
  V1Deployment,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1Toleration,
} from "@kubernetes/client-node";
import { parsePrefix } from "./addresses.js";
import { GATEWAY_PORT } from "./config.js";
import { GATEWAY_OBJECTS } from "./gateway/agent.js";

/** Where and how the gateway runs (a node that runs real pods, its image). */
export interface GatewayPlacement {
  image: string;
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
}

export const GATEWAY_NAME = "tenantry-gateway";
export const GATEWAY_APP_LABEL = "app.kubernetes.io/name";
/** The node routes these prefixes (the peers' ranges) through the gateway pod. */
export const POD_ROUTES_ANNOTATION = "network.tenantry.dev/routes";
/** An unprivileged user: the gateway needs NET_ADMIN in its own network namespace, nothing else. */
const GATEWAY_USER = 65532;

const labels = { [GATEWAY_APP_LABEL]: GATEWAY_NAME, "app.kubernetes.io/managed-by": "tenantry" };

/**
 * The gateway's identity and rights in tenantry's namespace: it reads its configuration, keeps
 * its own key (the Secret no other ServiceAccount may read) and writes its status; nothing else.
 */
export function gatewayAccess(namespace: string): [V1ServiceAccount, V1Role, V1RoleBinding] {
  const meta = { name: GATEWAY_NAME, namespace, labels };
  const { keySecret, config, status } = GATEWAY_OBJECTS;
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: meta,
      rules: [
        { apiGroups: [""], resources: ["secrets"], verbs: ["get", "update"], resourceNames: [keySecret] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: [config] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "patch"], resourceNames: [status] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: meta,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: GATEWAY_NAME },
      subjects: [{ kind: "ServiceAccount", name: GATEWAY_NAME, namespace }],
    },
  ];
}

/** Made once, never overwritten: the gateway fills the key Secret itself and writes its status. */
export function gatewayStores(namespace: string): [V1Secret, V1ConfigMap] {
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: GATEWAY_OBJECTS.keySecret, namespace, labels },
      type: "Opaque",
    },
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: GATEWAY_OBJECTS.status, namespace, labels } },
  ];
}

export function gatewayConfigMap(namespace: string, configJson: string): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: GATEWAY_OBJECTS.config, namespace, labels },
    data: { "config.json": configJson },
  };
}

/** The gateway's Service: its UDP port behind the cluster's load balancer (its address is the endpoint). */
export function gatewayService(namespace: string): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: GATEWAY_NAME, namespace, labels },
    spec: {
      type: "LoadBalancer",
      selector: { [GATEWAY_APP_LABEL]: GATEWAY_NAME },
      ports: [{ name: "wireguard", protocol: "UDP", port: GATEWAY_PORT, targetPort: GATEWAY_PORT }],
    },
  };
}

/**
 * One gateway pod (Recreate: two would fight over the tunnel's address): wireguard-go on a TUN
 * device, NET_ADMIN in its own network namespace, forwarding on there, its socket on an emptyDir.
 */
export function gatewayDeployment(namespace: string, placement: GatewayPlacement): V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: GATEWAY_NAME, namespace, labels },
    spec: {
      replicas: 1,
      strategy: { type: "Recreate" },
      selector: { matchLabels: { [GATEWAY_APP_LABEL]: GATEWAY_NAME } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: GATEWAY_NAME,
          ...(placement.nodeSelector ? { nodeSelector: placement.nodeSelector } : {}),
          ...(placement.tolerations ? { tolerations: placement.tolerations } : {}),
          securityContext: {
            runAsUser: GATEWAY_USER,
            runAsGroup: GATEWAY_USER,
            runAsNonRoot: true,
            sysctls: [{ name: "net.ipv4.ip_forward", value: "1" }],
          },
          containers: [
            {
              name: "gateway",
              image: placement.image,
              env: [
                { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
                { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              ],
              ports: [{ name: "wireguard", containerPort: GATEWAY_PORT, protocol: "UDP" }],
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
              },
              volumeMounts: [
                { name: "tun", mountPath: "/dev/net/tun" },
                { name: "sockets", mountPath: "/var/run/wireguard" },
              ],
            },
          ],
          volumes: [
            { name: "tun", hostPath: { path: "/dev/net/tun", type: "CharDevice" } },
            { name: "sockets", emptyDir: {} },
          ],
        },
      },
    },
  };
}

export function gatewayObjects(namespace: string, placement: GatewayPlacement): KubernetesObject[] {
  return [...gatewayAccess(namespace), gatewayService(namespace), gatewayDeployment(namespace, placement)];
}

/**
 * The gateway as `tenantry run`'s flags give it: its image (which turns the network on), the
 * nodes it may run on (`key=value,…`) and the cluster's pod range when its nodes do not say it.
 * A bad value is an error naming its flag.
 */
export function gatewayFromFlags(flags: {
  image?: string;
  nodeSelector?: string;
  podCidr?: string;
}): { gateway: GatewayPlacement; podCidr?: string } | undefined {
  if (!flags.image) {
    if (flags.nodeSelector || flags.podCidr)
      throw new Error("--network-gateway-node and --network-pod-cidr need --network-gateway <image>");
    return undefined;
  }
  const nodeSelector: Record<string, string> = {};
  for (const pair of (flags.nodeSelector ?? "").split(",").filter(Boolean)) {
    const [key, value, extra] = pair.split("=");
    if (!key || value === undefined || extra !== undefined)
      throw new Error(
        `--network-gateway-node: "${pair}" is not key=value (e.g. kubernetes.io/hostname=gw-1)`,
      );
    nodeSelector[key] = value;
  }
  if (flags.podCidr) parsePrefix(flags.podCidr, "--network-pod-cidr");
  return {
    gateway: { image: flags.image, ...(Object.keys(nodeSelector).length ? { nodeSelector } : {}) },
    ...(flags.podCidr ? { podCidr: flags.podCidr } : {}),
  };
}
