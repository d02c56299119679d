import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { LOCAL_IMAGES, type LocalImageKind } from "./constants.js";

/**
 * Which images the process node runs and what a container's command means for each. An image is
 * recognised by its repository (any tag or digest); its entrypoint and default command are those of
 * the real image, so a pod written for the real image runs the same program here.
 */
interface ImageConfig {
  repositories: string[];
  entrypoint: string[];
  cmd: string[];
  /** Program names of the image that start its server, with what follows them as the server's args. */
  programs: Record<string, number>;
  description: string;
}

const IMAGES: Record<LocalImageKind, ImageConfig> = {
  jupyter: {
    repositories: [
      "quay.io/jupyter/base-notebook",
      "quay.io/jupyter/minimal-notebook",
      "docker.io/jupyter/base-notebook",
      "docker.io/jupyter/minimal-notebook",
    ],
    entrypoint: ["tini", "-g", "--"],
    cmd: ["start-notebook.py"],
    programs: {
      "start-notebook.py": 1,
      "start-notebook.sh": 1,
      "start-singleuser.py": 1,
      "start-singleuser.sh": 1,
      "jupyterhub-singleuser": 1,
      "jupyter-server": 1,
      "jupyter-lab": 1,
      "jupyter-notebook": 1,
    },
    description: "a Jupyter Server",
  },
  echo: {
    repositories: ["docker.io/jmalloc/echo-server"],
    entrypoint: ["/bin/echo-server"],
    cmd: [],
    programs: { "echo-server": 1 },
    description: "an HTTP and WebSocket echo server",
  },
  backupAgent: {
    repositories: ["ghcr.io/tenantry/backup-agent"],
    entrypoint: ["tenantry-backup-agent"],
    cmd: [],
    programs: { "tenantry-backup-agent": 1 },
    description: "tenantry's backup agent",
  },
  runtimeAgent: {
    repositories: ["ghcr.io/tenantry/runtime-agent"],
    entrypoint: ["tenantry-runtime-agent"],
    cmd: [],
    programs: { "tenantry-runtime-agent": 1 },
    description: "tenantry's runtime agent",
  },
  networkGateway: {
    repositories: ["ghcr.io/tenantry/network-gateway"],
    entrypoint: ["tenantry-network-gateway"],
    cmd: [],
    programs: { "tenantry-network-gateway": 1 },
    description: "tenantry's network gateway (wireguard-go)",
  },
  pause: {
    repositories: ["registry.k8s.io/pause", "k8s.gcr.io/pause"],
    entrypoint: ["/pause"],
    cmd: [],
    programs: { pause: 1 },
    description: "a process that sleeps",
  },
  busybox: {
    repositories: ["docker.io/library/busybox", "docker.io/rancher/mirrored-library-busybox"],
    entrypoint: [],
    cmd: ["sh"],
    programs: { sh: 1 },
    description: "a POSIX shell",
  },
};

/** `jmalloc/echo-server:v1` → `docker.io/jmalloc/echo-server`, as container runtimes read names. */
export function imageRepository(image: string): string {
  let name = image.split("@")[0]!;
  const lastSlash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  if (colon > lastSlash) name = name.slice(0, colon);
  const parts = name.split("/");
  const hasRegistry = parts.length > 1 && /[.:]|^localhost$/.test(parts[0]!);
  if (!hasRegistry) {
    if (parts.length === 1) parts.unshift("library");
    parts.unshift("docker.io");
  }
  if (parts[0] === "index.docker.io" || parts[0] === "registry-1.docker.io") parts[0] = "docker.io";
  return parts.join("/");
}

export function imageKind(image: string): LocalImageKind | undefined {
  const repository = imageRepository(image);
  return (Object.keys(IMAGES) as LocalImageKind[]).find((kind) =>
    IMAGES[kind].repositories.includes(repository),
  );
}

/** The message of a pull that cannot succeed here. */
export function unknownImageMessage(image: string): string {
  const known = (Object.keys(LOCAL_IMAGES) as LocalImageKind[])
    .map((kind) => `${LOCAL_IMAGES[kind]} (${IMAGES[kind].description})`)
    .join(", ");
  return `the process node cannot run image "${image}": it runs ${known}, any tag`;
}

/** IfNotPresent unless the pod says otherwise or names no tag or `latest`, as the API server defaults it. */
export function pullPolicy(image: string, policy: string | undefined): "Always" | "IfNotPresent" | "Never" {
  if (policy === "Always" || policy === "IfNotPresent" || policy === "Never") return policy;
  if (image.includes("@")) return "IfNotPresent";
  const tag = /:([^/:]+)$/.exec(image)?.[1];
  return !tag || tag === "latest" ? "Always" : "IfNotPresent";
}

const SINGLEUSER_PROGRAMS = ["jupyterhub-singleuser", "start-singleuser.py", "start-singleuser.sh"];

/** What one container runs on the process node. */
export type ContainerProgram =
  | { program: "exit"; code: number }
  | { program: "sleep"; seconds?: number }
  | { program: "echo" }
  | { program: "jupyter"; args: string[]; singleuser?: true }
  | { program: "backup-agent"; args: string[] }
  | { program: "network-gateway" }
  | { program: "shell"; args: string[] }
  | { program: "not-found"; message: string };

/**
 * The program a container runs, from its image and its (already expanded) command and args, with
 * the runtime's rules: command replaces the entrypoint and drops the image's default command, args
 * replace the default command.
 */
export function containerProgram(
  kind: LocalImageKind,
  command?: string[],
  args?: string[],
): ContainerProgram {
  const image = IMAGES[kind];
  let argv = [
    ...(command?.length ? command : image.entrypoint),
    ...(args ?? (command?.length ? [] : image.cmd)),
  ];
  if (argv[0] !== undefined && basename(argv[0]) === "tini") {
    const end = argv.indexOf("--");
    argv = argv.slice(end >= 0 ? end + 1 : 1);
  }
  const program = argv[0] === undefined ? "" : basename(argv[0]);
  if (program === "true") return { program: "exit", code: 0 };
  if (program === "false") return { program: "exit", code: 1 };
  if (program === "sleep") {
    const seconds = Number(argv[1]);
    return Number.isFinite(seconds) && seconds >= 0 ? { program: "sleep", seconds } : { program: "sleep" };
  }
  const skip = image.programs[program];
  if (skip !== undefined) {
    if (kind === "jupyter") {
      // JupyterHub's single-user server, as the images' start-singleuser scripts exec it.
      const singleuser = SINGLEUSER_PROGRAMS.includes(program) ? { singleuser: true as const } : {};
      return { program: "jupyter", args: argv.slice(skip), ...singleuser };
    }
    if (kind === "backupAgent") return { program: "backup-agent", args: argv.slice(skip) };
    if (kind === "networkGateway") return { program: "network-gateway" };
    if (kind === "busybox") return { program: "shell", args: argv.slice(skip) };
    if (kind === "runtimeAgent") return { program: "shell", args: runtimeAgentShellArgs(argv.slice(skip)) };
    return kind === "echo" ? { program: "echo" } : { program: "sleep" };
  }
  if (kind === "jupyter") {
    if (program === "jupyter" && ["server", "lab", "notebook"].includes(argv[1] ?? ""))
      return { program: "jupyter", args: argv.slice(2) };
    // Only arguments: what the image's start script would have been given.
    if (program.startsWith("--")) return { program: "jupyter", args: argv };
  }
  const known = [
    "true",
    "false",
    "sleep",
    ...Object.keys(image.programs),
    ...(kind === "jupyter" ? ["jupyter"] : []),
  ];
  return {
    program: "not-found",
    message: `exec: "${argv[0] ?? ""}": executable file not found in $PATH (the process node runs these programs of ${imageRepository(LOCAL_IMAGES[kind])}: ${known.join(", ")})`,
  };
}

/** The runtime agent's program (src/runtimes/agent/main.ts), run with this machine's node. */
export const RUNTIME_AGENT = fileURLToPath(new URL("../../runtimes/agent/main.ts", import.meta.url));

/**
 * The runtime agent image's command on the process node: the shell execs node on the agent's
 * program with the container's arguments (its settings come from the environment).
 */
function runtimeAgentShellArgs(args: string[]): string[] {
  return [
    "-c",
    'exec "$@"',
    "tenantry-runtime-agent",
    process.execPath,
    "--import",
    import.meta.resolve("tsx"),
    RUNTIME_AGENT,
    ...args,
  ];
}

/**
 * A path as the container sees it, mapped to a host folder through its mounts (keys without a
 * trailing slash, as containerMounts gives them); undefined when no mount holds it.
 */
export function hostPathOf(containerPath: string, mounts: ReadonlyMap<string, string>): string | undefined {
  const normalised = containerPath.replace(/\/+$/, "") || "/";
  let best: string | undefined;
  for (const mountPath of mounts.keys()) {
    const prefix = mountPath.replace(/\/+$/, "") || "/";
    const inside = normalised === prefix || normalised.startsWith(prefix === "/" ? "/" : `${prefix}/`);
    if (inside && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  if (best === undefined) return undefined;
  const base = mounts.get(best)!;
  const rest = normalised.slice(best.length).replace(/^\//, "");
  return rest ? `${base}/${rest}` : base;
}

/** Flags of jupyter-server whose value names a folder inside the container. */
const ROOT_DIR_FLAGS = [
  "--ServerApp.root_dir",
  "--ServerApp.notebook_dir",
  "--NotebookApp.notebook_dir",
  "--notebook-dir",
];
const IP_FLAGS = ["--ip", "--ServerApp.ip", "--NotebookApp.ip"];

/**
 * jupyter-server's arguments on the process node: the container's own, except that it listens on
 * the pod's IP, its root folder is mapped through the mounts (default `defaultRoot`), it never opens
 * a browser and never moves to another port when its own is taken.
 */
export function jupyterServerArgs(
  containerArgs: string[],
  options: { ip: string; defaultRoot: string; mounts: ReadonlyMap<string, string>; allowRoot: boolean },
): string[] {
  const kept: string[] = [];
  let rootDir: string | undefined;
  for (let i = 0; i < containerArgs.length; i++) {
    const arg = containerArgs[i]!;
    const [flag, inlineValue] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    const rewritten = ROOT_DIR_FLAGS.includes(flag) || IP_FLAGS.includes(flag);
    if (!rewritten) {
      kept.push(arg);
      continue;
    }
    const value = inlineValue ?? containerArgs[++i];
    if (ROOT_DIR_FLAGS.includes(flag) && value) rootDir = hostPathOf(value, options.mounts);
  }
  return [
    ...kept,
    `--ServerApp.ip=${options.ip}`,
    `--ServerApp.root_dir=${rootDir ?? options.defaultRoot}`,
    "--ServerApp.open_browser=False",
    "--ServerApp.port_retries=0",
    ...(options.allowRoot ? ["--ServerApp.allow_root=True"] : []),
  ];
}

/**
 * A shell's arguments on the process node: each absolute path inside a mount (a script in a
 * ConfigMap volume, say) becomes the host path; options and inline scripts (`-c …`) stay as given.
 */
export function shellArgs(containerArgs: string[], mounts: ReadonlyMap<string, string>): string[] {
  return containerArgs.map((arg) => (arg.startsWith("/") ? (hostPathOf(arg, mounts) ?? arg) : arg));
}

/** The backup agent's arguments on the process node: its `--dir` and `--token-file` (paths in the container) mapped through the mounts. */
export function backupAgentArgs(containerArgs: string[], mounts: ReadonlyMap<string, string>): string[] {
  const paths = ["--dir", "--token-file"];
  const mapped: string[] = [];
  for (let i = 0; i < containerArgs.length; i++) {
    const arg = containerArgs[i]!;
    const option = paths.find((p) => arg === p || arg.startsWith(`${p}=`));
    if (option && arg === option && i + 1 < containerArgs.length) {
      const value = containerArgs[++i]!;
      mapped.push(arg, hostPathOf(value, mounts) ?? value);
    } else if (option && arg !== option) {
      const value = arg.slice(option.length + 1);
      mapped.push(`${option}=${hostPathOf(value, mounts) ?? value}`);
    } else mapped.push(arg);
  }
  return mapped;
}
