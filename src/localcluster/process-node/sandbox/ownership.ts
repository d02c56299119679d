import { spawn } from "node:child_process";
import { chmod, chown, stat } from "node:fs/promises";
import type { V1Pod } from "@kubernetes/client-node";

/**
 * Who owns a pod's volumes on the process node, as the kubelet arranges it for a pod's user:
 *
 * - emptyDir folders are made world-writable (0777), as the kubelet makes them;
 * - a claim, with the pod's `fsGroup`: its files get that group, group read/write and setgid
 *   folders (the kubelet's SetVolumeOwnership; with `fsGroupChangePolicy: OnRootMismatch` only when
 *   the top folder's group differs); without one, the process node does the same for the pod's user:
 *   a claim whose top folder belongs to another user is given, files and all, to the pod's user and
 *   group (a fresh claim made by the provisioner, or one restored by another user);
 * - secret, configMap, downwardAPI and projected files belong to the pod's user (and fsGroup);
 * - a projected service account token follows the kubelet's rule: when every container of the pod
 *   runs as one user set in its security context, the token is that user's alone (0600); else with
 *   an fsGroup it is 0600 plus group read for that group; else it has its volume's defaultMode
 *   (0644 unless set), so that containers running as different users can all read it.
 */
export interface VolumeOwner {
  uid: number;
  gid: number;
  fsGroup?: number;
  onRootMismatch: boolean;
  /** Every container runs as this one user, set in the pod's or its own security context. */
  sharedUser: boolean;
}

export function volumeOwner(pod: V1Pod, user: { uid: number; gid: number }): VolumeOwner {
  const context = pod.spec?.securityContext;
  return {
    ...user,
    ...(context?.fsGroup !== undefined ? { fsGroup: context.fsGroup } : {}),
    onRootMismatch: context?.fsGroupChangePolicy === "OnRootMismatch",
    sharedUser: sharedRunAsUser(pod) !== undefined,
  };
}

/** The one runAsUser all of the pod's containers have (the kubelet's FsUser), if they have one. */
export function sharedRunAsUser(pod: V1Pod): number | undefined {
  const spec = pod.spec;
  const containers = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
  const users = new Set(
    containers.map((c) => c.securityContext?.runAsUser ?? spec?.securityContext?.runAsUser),
  );
  const [only] = users;
  return users.size === 1 ? only : undefined;
}

function runTool(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ["ignore", "ignore", "pipe"],
      env: { PATH: "/usr/bin:/bin" },
    });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")}: ${stderr.trim()}`)),
    );
  });
}

/** The claim's folder as the pod's user needs it (see above); symbolic links are never followed. */
export async function ownClaim(path: string, owner: VolumeOwner): Promise<void> {
  const top = await stat(path);
  if (owner.fsGroup !== undefined) {
    if (owner.onRootMismatch && top.gid === owner.fsGroup) return;
    await runTool("chgrp", ["-R", "-h", String(owner.fsGroup), path]);
    await runTool("chmod", ["-R", "g+rwX", path]);
    await runTool("find", [path, "-type", "d", "-exec", "chmod", "g+s", "{}", "+"]);
    return;
  }
  if (top.uid === owner.uid && top.gid === owner.gid) return;
  await runTool("chown", ["-R", "-h", `${owner.uid}:${owner.gid}`, path]);
}

/** An emptyDir, as the kubelet makes it: anyone in the pod may write. */
export async function openEmptyDir(path: string, owner: VolumeOwner): Promise<void> {
  await chmod(path, 0o777);
  if (owner.fsGroup !== undefined) {
    await chown(path, -1, owner.fsGroup);
    await chmod(path, 0o2777);
  }
}

/** Files written for the pod (secrets, config maps, tokens) belong to its user. */
export async function ownWrittenFiles(path: string, owner: VolumeOwner): Promise<void> {
  await runTool("chown", ["-R", "-h", `${owner.uid}:${owner.fsGroup ?? owner.gid}`, path]);
}

/** A service account token's mode by the kubelet's rule (see above); written 0600 before. */
export async function openTokens(
  tokens: { file: string; defaultMode: number }[],
  owner: VolumeOwner,
): Promise<void> {
  if (owner.sharedUser) return;
  for (const token of tokens)
    await chmod(token.file, owner.fsGroup !== undefined ? 0o640 : token.defaultMode);
}

/** The owner of a claim's folder, when it is not root (see users.ts). */
export async function claimOwnerOf(path: string): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const top = await stat(path);
    return top.uid === 0 ? undefined : { uid: top.uid, gid: top.gid };
  } catch {
    return undefined;
  }
}
