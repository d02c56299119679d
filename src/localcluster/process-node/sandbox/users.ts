import { createHash } from "node:crypto";
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import type { LocalImageKind } from "../constants.js";
import { ContainerConfigError } from "../env.js";

/**
 * Whom a container runs as on the process node, as a container runtime decides it:
 *
 * - the container's `securityContext.runAsUser`/`runAsGroup`, else the pod's, else the image's own
 *   user (Jupyter's jovyan, 1000:100; pause's 65535);
 * - an image whose real default user is root (echo, busybox, the backup agent) runs instead, when
 *   the pod mounts a claim whose folder belongs to a user, as that user (a backup or restore of a
 *   runtime's volume works on the files as their owner), else as the pod's own user:
 *   uid = gid = 2000000 + n, n (0–65535) from a hash of the pod's UID — never root;
 * - root (runAsUser 0, or group 0) is root only in a user namespace of the container's own, mapped
 *   to the pod's own user outside: it owns its own files and nothing of the machine's;
 * - supplementary groups: the pod's fsGroup and supplementalGroups (group 0 dropped);
 * - no capabilities, except NET_BIND_SERVICE and NET_ADMIN when asked for; any other added capability, and
 *   `privileged`, are refused (CreateContainerConfigError naming the field), and
 *   `runAsNonRoot: true` with an effective user 0 is refused as the kubelet refuses it.
 */
export interface RunAs {
  uid: number;
  gid: number;
  groups: number[];
  /** Root inside a user namespace: uid/gid above are the machine's ids it is mapped to. */
  userNamespace: boolean;
  /** Capabilities kept (lower case, as setpriv names them). */
  capabilities: string[];
  /** The ids the container sees (0 in a user namespace). */
  containerUid: number;
  containerGid: number;
}

export const POD_USER_BASE = 2_000_000;
export const POD_USER_RANGE = 65_536;

/** The default user (and group) of a pod whose image would run as root. */
export function podUser(podUid: string): number {
  const n = createHash("sha256").update(podUid).digest().readUInt32BE(0) % POD_USER_RANGE;
  return POD_USER_BASE + n;
}

/** The user each image declares (its Dockerfile's USER), where it is not root. */
const IMAGE_USERS: Partial<Record<LocalImageKind, { uid: number; gid: number }>> = {
  jupyter: { uid: 1000, gid: 100 },
  pause: { uid: 65535, gid: 65535 },
};

/**
 * NET_ADMIN acts on the container's own network namespace (a gateway's TUN device, routes and
 * nftables rules); only pods tenantry or an administrator applies reach the process node.
 */
const ALLOWED_CAPABILITIES = ["NET_BIND_SERVICE", "NET_ADMIN"];

const normalise = (capability: string) => capability.toUpperCase().replace(/^CAP_/, "");

function capabilities(container: V1Container, field: string): string[] {
  const context = container.securityContext;
  if (context?.privileged)
    throw new ContainerConfigError(
      `${field}.securityContext.privileged: the process node runs no privileged containers`,
    );
  const added = (context?.capabilities?.add ?? []).map(normalise);
  added.forEach((capability, i) => {
    if (!ALLOWED_CAPABILITIES.includes(capability))
      throw new ContainerConfigError(
        `${field}.securityContext.capabilities.add[${i}]: capability ${capability} is not granted on the process node (only ${ALLOWED_CAPABILITIES.join(", ")})`,
      );
  });
  // As container runtimes apply them: ALL dropped first, then what is added, then what is dropped
  // by name. `drop: [ALL], add: [NET_BIND_SERVICE]` (what restricted pod security asks) keeps it.
  const dropped = (context?.capabilities?.drop ?? []).map(normalise);
  return added.filter((c) => !dropped.includes(c)).map((c) => c.toLowerCase());
}

/**
 * The container's user. `claimOwner` is the owner of the first claim the pod mounts, when that is
 * not root; `field` names the container for messages (`spec.containers[0]`).
 */
export function containerRunAs(
  pod: V1Pod,
  container: V1Container,
  image: LocalImageKind,
  field: string,
  claimOwner?: { uid: number; gid: number },
): RunAs {
  const podContext = pod.spec?.securityContext;
  const own = container.securityContext;
  const imageUser = IMAGE_USERS[image];
  const fallback = imageUser ?? claimOwner;
  const own_uid = podUser(pod.metadata?.uid ?? "");
  const uid = own?.runAsUser ?? podContext?.runAsUser ?? fallback?.uid ?? own_uid;
  const explicitGroup = own?.runAsGroup ?? podContext?.runAsGroup;
  const gid =
    explicitGroup ??
    (fallback && uid === fallback.uid ? fallback.gid : undefined) ??
    (uid === own_uid ? own_uid : uid);
  if ((own?.runAsNonRoot ?? podContext?.runAsNonRoot) === true && uid === 0)
    throw new ContainerConfigError(
      `container has runAsNonRoot and image will run as root (pod: "${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})", container: ${container.name})`,
    );
  const groups = [
    ...(podContext?.fsGroup !== undefined ? [podContext.fsGroup] : []),
    ...(podContext?.supplementalGroups ?? []),
  ].filter((g, i, all) => g !== 0 && all.indexOf(g) === i);
  const caps = capabilities(container, field);
  if (uid === 0 || gid === 0) {
    return {
      uid: uid === 0 ? own_uid : uid,
      gid: gid === 0 ? own_uid : gid,
      groups,
      userNamespace: true,
      capabilities: caps,
      containerUid: 0,
      containerGid: 0,
    };
  }
  return { uid, gid, groups, userNamespace: false, capabilities: caps, containerUid: uid, containerGid: gid };
}
