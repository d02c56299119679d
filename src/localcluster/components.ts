import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The Kubernetes components tenantry builds from their Go modules. Each has a small wrapper
 * module in `modules/<name>` whose go.mod pins the release and whose go.sum pins every byte.
 */
export type ComponentName =
  | "kubernetes"
  | "kube-proxy"
  | "coredns"
  | "kube-router"
  | "etcd"
  | "kwok"
  | "helm";

export interface ComponentSpec<Name extends string = ComponentName> {
  name: Name;
  /** The module whose version names the build. */
  module: string;
  /** Main packages to build, each giving one binary named after its last path element. */
  packages: string[];
  binaries: string[];
  /** Extra linker flags; Kubernetes reads its version from variables set here. */
  ldflags(version: string): string[];
  /** Files copied from the module's own source next to the binaries (e.g. KWOK's default stages). */
  assets?: { from: string[]; to: string }[];
  /** Go build tags (`-tags`). */
  tags?: string[];
  /**
   * Build with cgo (a C compiler on PATH): only for a component whose needed part is C, such as
   * Hydra's SQLite. The others are static Go binaries, as their official builds are.
   */
  cgo?: boolean;
}

export const modulesDir = join(dirname(fileURLToPath(import.meta.url)), "modules");

function kubernetesVersionFlags(version: string): string[] {
  const match = /^v(\d+)\.(\d+)\./.exec(version);
  if (!match) throw new Error(`unexpected Kubernetes version ${version}`);
  const values: Record<string, string> = {
    gitVersion: version,
    gitMajor: match[1]!,
    gitMinor: match[2]!,
    gitTreeState: "clean",
    gitCommit: "0000000000000000000000000000000000000000",
    // A fixed date keeps the build reproducible and the cache key meaningful.
    buildDate: "1970-01-01T00:00:00Z",
  };
  const flags: string[] = [];
  for (const pkg of ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]) {
    for (const [name, value] of Object.entries(values)) flags.push(`-X ${pkg}.${name}=${value}`);
  }
  return flags;
}

export const components: readonly ComponentSpec[] = [
  {
    name: "kubernetes",
    module: "k8s.io/kubernetes",
    packages: [
      "k8s.io/kubernetes/cmd/kube-apiserver",
      "k8s.io/kubernetes/cmd/kube-controller-manager",
      "k8s.io/kubernetes/cmd/kube-scheduler",
    ],
    binaries: ["kube-apiserver", "kube-controller-manager", "kube-scheduler"],
    ldflags: kubernetesVersionFlags,
  },
  {
    // Its own wrapper module (same pins as "kubernetes"), so adding it rebuilt nothing else.
    name: "kube-proxy",
    module: "k8s.io/kubernetes",
    packages: ["k8s.io/kubernetes/cmd/kube-proxy"],
    binaries: ["kube-proxy"],
    ldflags: kubernetesVersionFlags,
  },
  {
    // The wrapper's main.go: CoreDNS's coremain with the plugins the clusters' DNS uses.
    name: "coredns",
    module: "github.com/coredns/coredns",
    packages: ["tenantry.dev/localcluster/coredns"],
    binaries: ["coredns"],
    ldflags: () => [],
  },
  {
    name: "kube-router",
    module: "github.com/cloudnativelabs/kube-router/v2",
    packages: ["github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"],
    binaries: ["kube-router"],
    ldflags: (version) => [`-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=${version}`],
  },
  {
    name: "etcd",
    module: "go.etcd.io/etcd/server/v3",
    packages: ["go.etcd.io/etcd/server/v3"],
    binaries: ["etcd"],
    ldflags: () => [],
  },
  {
    name: "kwok",
    module: "sigs.k8s.io/kwok",
    packages: ["sigs.k8s.io/kwok/cmd/kwok"],
    binaries: ["kwok"],
    ldflags: () => [],
    assets: [
      {
        // KWOK's own "fast" stages: nodes become Ready and keep a lease; pods run at once and finish.
        from: [
          "kustomize/stage/node/fast/node-initialize.yaml",
          "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
          "kustomize/stage/pod/fast/pod-ready.yaml",
          "kustomize/stage/pod/fast/pod-complete.yaml",
          "kustomize/stage/pod/fast/pod-delete.yaml",
        ],
        to: "kwok-stages.yaml",
      },
    ],
  },
];

/** Helm, to lint, render and install tenantry's chart; built on demand, not for every cluster. */
export const helmComponent: ComponentSpec = {
  name: "helm",
  module: "helm.sh/helm/v3",
  packages: ["helm.sh/helm/v3/cmd/helm"],
  binaries: ["helm"],
  ldflags: (version) => [`-X helm.sh/helm/v3/internal/version.version=${version}`, ...helmKubeVersionFlags()],
};

/**
 * The Kubernetes version helm assumes without a cluster (`helm template`, `helm lint`): that of the
 * client-go it is built with, set at link time as helm's own Makefile does.
 */
function helmKubeVersionFlags(): string[] {
  const goMod = readFileSync(join(modulesDir, "helm", "go.mod"), "utf8");
  const match = /^\s*k8s\.io\/client-go\s+v0\.(\d+)\./m.exec(goMod);
  if (!match) throw new Error("modules/helm/go.mod does not require k8s.io/client-go");
  return ["helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"].flatMap((pkg) => [
    `-X ${pkg}.k8sVersionMajor=1`,
    `-X ${pkg}.k8sVersionMinor=${match[1]}`,
  ]);
}

/**
 * The S3-compatible object store of the embedded default and the tests: versitygw serving a folder
 * (its `posix` backend). Built like the Kubernetes components, but only when a store is wanted.
 */
export const objectStoreComponent: ComponentSpec<"versitygw"> = {
  name: "versitygw",
  module: "github.com/versity/versitygw",
  packages: ["github.com/versity/versitygw/cmd/versitygw"],
  binaries: ["versitygw"],
  ldflags: () => [],
};

/**
 * wireguard-go, the userspace WireGuard of the clusters' network gateways (src/multicluster/network):
 * kernel WireGuard is missing here, /dev/net/tun is not. Its module is published only as
 * pseudo-versions, which name the build like a release does. Built on demand, like Helm.
 */
export const wireguardComponent: ComponentSpec<"wireguard-go"> = {
  name: "wireguard-go",
  module: "golang.zx2c4.com/wireguard",
  packages: ["golang.zx2c4.com/wireguard"],
  binaries: ["wireguard-go"],
  ldflags: () => [],
};

/** The version pinned by the wrapper module's go.mod (`require <module> <version>`). */
export function pinnedVersion(spec: ComponentSpec<string>): string {
  const goMod = readFileSync(join(modulesDir, spec.name, "go.mod"), "utf8");
  const escaped = spec.module.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m").exec(goMod);
  if (!match) throw new Error(`modules/${spec.name}/go.mod does not require ${spec.module}`);
  return match[1]!;
}

/** The Go version the wrapper module asks for (its `go` line), the oldest toolchain that can build it. */
export function requiredGoVersion(spec: ComponentSpec<string>): string {
  const goMod = readFileSync(join(modulesDir, spec.name, "go.mod"), "utf8");
  const match = /^go\s+(\S+)/m.exec(goMod);
  return match?.[1] ?? "1.22";
}

/**
 * Ory Hydra, a real OpenID Connect provider for the OIDC tests (tenantry's OIDC adapter and
 * kube-apiserver's token webhook against someone else's issuer). Its in-memory database is SQLite
 * through mattn/go-sqlite3, which Hydra compiles in only with the `sqlite` tag and which needs cgo;
 * without it the DSN `memory` is refused. Built on demand, like Helm.
 */
export const hydraComponent: ComponentSpec<"hydra"> = {
  name: "hydra",
  module: "github.com/ory/hydra/v2",
  packages: ["github.com/ory/hydra/v2"],
  binaries: ["hydra"],
  // Hydra's own release flags: `hydra version` names the build.
  ldflags: (version) => [
    `-X github.com/ory/hydra/v2/driver/config.Version=${version}`,
    "-X github.com/ory/hydra/v2/driver/config.Date=1970-01-01T00:00:00Z",
  ],
  tags: ["sqlite", "sqlite_omit_load_extension"],
  cgo: true,
};
