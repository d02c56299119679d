/**
 * How a machine joins the cluster, the way kubeadm's nodes do: a bootstrap token (Secret
 * kube-system/bootstrap-token-<id>) lets the machine's kubelet ask for a client certificate
 * (CSR with CN system:node:<name>, O system:nodes, signer kube-apiserver-client-kubelet) that
 * kube-controller-manager approves and signs; with it, the kubelet registers its Node. The
 * machine learns all of this from its user data: a cloud-config document that writes the
 * bootstrap kubeconfig and the kubelet's flags and starts the kubelet.
 */
import { randomInt } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { kubeconfigYaml } from "../kube/index.js";
import {
  BOOTSTRAP_GROUP,
  BOOTSTRAP_NAMESPACE,
  BOOTSTRAP_TOKEN_PREFIX,
  BOOTSTRAP_TOKEN_SECRET_TYPE,
  WORKER_NODE_LABEL,
  WORKER_NODE_UID_LABEL,
} from "./labels.js";

const TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

function randomString(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)];
  return out;
}

export interface BootstrapToken {
  id: string;
  secret: string;
  expiration: Date;
}

/** A new token in kube-apiserver's format: `[a-z0-9]{6}.[a-z0-9]{16}`. */
export function newBootstrapToken(expiration: Date): BootstrapToken {
  return { id: randomString(6), secret: randomString(16), expiration };
}

export function bootstrapTokenSecretName(id: string): string {
  return `${BOOTSTRAP_TOKEN_PREFIX}${id}`;
}

/** The id of a bootstrap token user (`system:bootstrap:<id>`), or undefined. */
export function tokenIdOfUser(username: string | undefined): string | undefined {
  const match = /^system:bootstrap:([a-z0-9]{6})$/.exec(username ?? "");
  return match?.[1];
}

/**
 * The token's Secret, as kube-apiserver's bootstrap token authenticator reads it: usable only for
 * authentication, adding tenantry's bootstrappers group, until `expiration` (when
 * kube-controller-manager's tokencleaner deletes it). Labelled with the WorkerNode it is for.
 */
export function bootstrapTokenSecret(token: BootstrapToken, node: { name: string; uid: string }): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: bootstrapTokenSecretName(token.id),
      namespace: BOOTSTRAP_NAMESPACE,
      labels: {
        [WORKER_NODE_LABEL]: node.name,
        [WORKER_NODE_UID_LABEL]: node.uid,
        "app.kubernetes.io/managed-by": "tenantry",
      },
    },
    type: BOOTSTRAP_TOKEN_SECRET_TYPE,
    stringData: {
      description: `tenantry worker node ${node.name}`,
      "token-id": token.id,
      "token-secret": token.secret,
      expiration: token.expiration.toISOString().replace(/\.\d+Z$/, "Z"),
      "usage-bootstrap-authentication": "true",
      "auth-extra-groups": BOOTSTRAP_GROUP,
    },
  };
}

/** The token (`id.secret`) in a bootstrap token Secret, and when it expires. */
export function tokenOfSecret(secret: V1Secret): BootstrapToken | undefined {
  const read = (key: string) => {
    const value = secret.data?.[key];
    return value === undefined ? secret.stringData?.[key] : Buffer.from(value, "base64").toString();
  };
  const id = read("token-id");
  const value = read("token-secret");
  const expiration = read("expiration");
  if (!id || !value) return undefined;
  return { id, secret: value, expiration: expiration ? new Date(expiration) : new Date(8.64e15) };
}

export interface JoinConfiguration {
  nodeName: string;
  /** kube-apiserver as the machine reaches it. */
  server: string;
  /** The cluster's CA certificate (PEM), which the machine trusts kube-apiserver by. */
  caPem: string;
  token: BootstrapToken;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
}

/** Where the user data puts things on the machine, as kubeadm's packages lay them out. */
export const JOIN_PATHS = {
  bootstrapKubeconfig: "/etc/kubernetes/bootstrap-kubelet.conf",
  kubeconfig: "/etc/kubernetes/kubelet.conf",
  ca: "/etc/kubernetes/pki/ca.crt",
  kubeletFlags: "/etc/default/kubelet",
} as const;

/** The kubelet's bootstrap kubeconfig: the cluster, its CA, and the token as the user. */
export function bootstrapKubeconfig(config: Pick<JoinConfiguration, "server" | "caPem" | "token">): string {
  return kubeconfigYaml([
    {
      name: "tls-bootstrap",
      cluster: {
        name: "cluster",
        server: config.server,
        caData: Buffer.from(config.caPem).toString("base64"),
      },
      user: { name: "tls-bootstrap", token: `${config.token.id}.${config.token.secret}` },
    },
  ]);
}

/** The kubelet's flags for joining: where its kubeconfigs are, its name, its labels and taints. */
export function kubeletFlags(config: Pick<JoinConfiguration, "nodeName" | "labels" | "taints">): string[] {
  const labels = Object.entries(config.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  const taints = config.taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`).join(",");
  return [
    `--bootstrap-kubeconfig=${JOIN_PATHS.bootstrapKubeconfig}`,
    `--kubeconfig=${JOIN_PATHS.kubeconfig}`,
    `--hostname-override=${config.nodeName}`,
    ...(labels ? [`--node-labels=${labels}`] : []),
    ...(taints ? [`--register-with-taints=${taints}`] : []),
  ];
}

/**
 * The machine's user data: a cloud-config document that any image with a kubelet (and a container
 * runtime) runs at first boot to join the cluster.
 */
export function renderUserData(config: JoinConfiguration): string {
  const document = {
    write_files: [
      {
        path: JOIN_PATHS.bootstrapKubeconfig,
        permissions: "0600",
        content: bootstrapKubeconfig(config),
      },
      { path: JOIN_PATHS.ca, permissions: "0644", content: config.caPem },
      {
        path: JOIN_PATHS.kubeletFlags,
        permissions: "0644",
        content: `KUBELET_EXTRA_ARGS="${kubeletFlags(config).join(" ")}"\n`,
      },
    ],
    runcmd: [["systemctl", "enable", "--now", "kubelet"]],
  };
  return `#cloud-config\n# tenantry worker node ${config.nodeName}: join the cluster at first boot (kubelet TLS bootstrap)\n${stringify(document, { lineWidth: 0 })}`;
}
