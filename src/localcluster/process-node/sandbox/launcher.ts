import { existsSync, lstatSync, statSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ContainerConfigError } from "../env.js";
import type { RunAs } from "./users.js";

/**
 * How a container is started on the process node: `nsenter` into the pod's network namespace,
 * `unshare` new mount, PID, UTS and IPC namespaces, and launch.sh, which builds a root filesystem
 * of its own on a tmpfs — the machine's /usr and /etc read-only, the program's own files
 * read-only, the pod's volumes at their paths — pivots into it and runs the program as its user
 * without capabilities. What it never sees: the clusters' folders (admin kubeconfigs, keys), the
 * cache, /root, /tmp of the machine, other pods' volumes, other processes.
 */
export const LAUNCH_SCRIPT = fileURLToPath(new URL("./launch.sh", import.meta.url));

/** One mount of the container's root filesystem. */
export interface SandboxMount {
  kind: "dir-ro" | "dir-rw" | "file-ro" | "file-rw" | "tmpfs" | "device";
  source: string;
  /** Where inside the container. */
  target: string;
}

export interface SandboxSpec {
  /** The container's folder on the machine (its spec and the mount point of its root live there). */
  dir: string;
  mounts: SandboxMount[];
  /** The environment the program gets, nothing else. */
  env: ReadonlyMap<string, string>;
  argv: string[];
  workdir: string;
  runAs: RunAs;
  hostname: string;
  /** The pod's network namespace; none for a pod on the host's network. */
  networkNamespace?: string;
}

/** Folders of the machine a container's root shows (read-only), besides what its program needs. */
const SYSTEM_DIRS = ["/usr", "/etc"];
/** Top-level folders that are links into /usr on merged-/usr systems, else folders of their own. */
const SYSTEM_TOPS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** Where no volume may go: the container's own system folders. */
const RESERVED = [
  "/usr",
  "/etc",
  "/proc",
  "/dev",
  "/sys",
  "/bin",
  "/sbin",
  "/lib",
  "/lib64",
  "/run/tenantry",
];

function systemMounts(): SandboxMount[] {
  const mounts: SandboxMount[] = SYSTEM_DIRS.map((dir) => ({ kind: "dir-ro", source: dir, target: dir }));
  for (const top of SYSTEM_TOPS) {
    if (!existsSync(top) || lstatSync(top).isSymbolicLink()) continue;
    mounts.push({ kind: "dir-ro", source: top, target: top });
  }
  return mounts;
}

/** A volume's mount path may not replace the container's system folders. */
/**
 * The one device a pod may be given through a hostPath volume (type CharDevice): the TUN device a
 * network gateway granted NET_ADMIN opens. Any other device is mounted as a file, unusable (nodev).
 */
export const USABLE_DEVICES = ["/dev/net/tun"];

export function checkMountTarget(target: string, field: string): void {
  // The TUN device is the one file of /dev a volume may provide (see USABLE_DEVICES).
  if (USABLE_DEVICES.includes(target)) return;
  const clash = RESERVED.find((r) => target === "/" || target === r || target.startsWith(`${r}/`));
  if (target === "/" || clash)
    throw new ContainerConfigError(
      `${field}: mount path ${target} is inside ${clash ?? "/"}, which the process node keeps for the container's system files`,
    );
}

/** A volume mount, as a folder or a single file (or the TUN device), read-only or not. */
export function volumeMount(source: string, target: string, readOnly: boolean): SandboxMount {
  const status = existsSync(source) ? statSync(source) : undefined;
  if (status?.isCharacterDevice() && USABLE_DEVICES.includes(source))
    return { kind: "device", source, target };
  const file = status !== undefined && !status.isDirectory();
  const kind = file ? (readOnly ? "file-ro" : "file-rw") : readOnly ? "dir-ro" : "dir-rw";
  return { kind, source, target };
}

const NO_TABS = /^[^\t\n\0]+$/;

/** Writes the container's spec (mounts, program and environment, working folder) for launch.sh. */
export async function writeSandbox(spec: SandboxSpec): Promise<{ root: string; specDir: string }> {
  const specDir = join(spec.dir, "sandbox");
  const root = join(spec.dir, "root");
  await mkdir(specDir, { recursive: true, mode: 0o700 });
  await chmod(spec.dir, 0o700);
  await mkdir(root, { recursive: true });
  const mounts = [...systemMounts(), ...spec.mounts];
  for (const mount of mounts)
    if (!NO_TABS.test(mount.source) || !NO_TABS.test(mount.target))
      throw new ContainerConfigError(
        `mount ${JSON.stringify(mount.target)}: paths may not hold tabs or newlines`,
      );
  await writeFile(
    join(specDir, "mounts"),
    mounts.map((m) => `${m.kind}\t${m.source}\t${m.target}\n`).join(""),
    { mode: 0o600 },
  );
  const environment = [...spec.env].map(([name, value]) => `${name}=${value}`);
  const exec = [...environment, ...spec.argv];
  if (exec.some((entry) => entry.includes("\0")))
    throw new ContainerConfigError("the environment and arguments may not hold NUL characters");
  await writeFile(join(specDir, "exec"), `${exec.join("\0")}\0`, { mode: 0o600 });
  await writeFile(join(specDir, "workdir"), spec.workdir, { mode: 0o600 });
  return { root, specDir };
}

/** The command that starts the container (its first element is the program). */
export function launcherArgv(spec: SandboxSpec, paths: { root: string; specDir: string }): string[] {
  const { runAs } = spec;
  const launch = [
    "unshare",
    "--mount",
    "--pid",
    "--uts",
    "--ipc",
    "--fork",
    // The container's init dies with this process: killing it (SIGKILL) ends the whole container.
    "--kill-child=SIGKILL",
    "--propagation=private",
    "--",
    "/bin/sh",
    LAUNCH_SCRIPT,
    paths.root,
    paths.specDir,
    String(runAs.uid),
    String(runAs.gid),
    runAs.groups.length ? runAs.groups.join(",") : "-",
    runAs.userNamespace ? "1" : "0",
    runAs.capabilities.length ? runAs.capabilities.join(",") : "-",
    spec.hostname.slice(0, 63),
  ];
  return spec.networkNamespace
    ? ["nsenter", `--net=/run/netns/${spec.networkNamespace}`, "--", ...launch]
    : launch;
}

/** Where a program's files live, when outside the folders every container sees. */
export function programMounts(paths: string[]): SandboxMount[] {
  return paths
    .filter((path) => !SYSTEM_DIRS.some((dir) => path === dir || path.startsWith(`${dir}/`)))
    .map((path) => ({ kind: "dir-ro" as const, source: path, target: path }));
}

/** The folder holding the node binary running this agent (bin/node's parent's parent). */
export function nodeInstallDir(): string {
  return dirname(dirname(process.execPath));
}
