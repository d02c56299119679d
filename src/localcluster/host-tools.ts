import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { cacheRoot, UserError } from "../common/index.js";
import { acquireLock } from "./lock.js";

const run = promisify(execFile);

/**
 * The machine's tools the local clusters' pod network needs, by the Debian package that has them:
 * nft (the pod network's and kube-proxy's rules), iptables and ipset (kube-router's NetworkPolicy
 * rules); ip, nsenter, unshare and setpriv come with every Debian. Missing ones are installed once
 * with apt-get when running as root (as the OpenStack tests do), else named in the error.
 */
const TOOLS: Record<string, string> = {
  nft: "nftables",
  iptables: "iptables",
  ipset: "ipset",
  ip: "iproute2",
  nsenter: "util-linux",
  unshare: "util-linux",
  setpriv: "util-linux",
};

const SBIN = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

function missingTools(): string[] {
  return Object.keys(TOOLS).filter((tool) => !SBIN.some((dir) => existsSync(join(dir, tool))));
}

export async function ensureHostTools(log: (line: string) => void): Promise<void> {
  let missing = missingTools();
  if (!missing.length) return;
  const packages = [...new Set(missing.map((tool) => TOOLS[tool]!))];
  if (process.getuid?.() !== 0 || !existsSync("/usr/bin/apt-get"))
    throw new UserError(
      `the local clusters' pod network needs ${missing.join(", ")}: install ${packages.join(" ")} (root is needed to run pods in namespaces of their own)`,
    );
  await mkdir(cacheRoot(), { recursive: true });
  const release = await acquireLock(
    join(cacheRoot(), "host-tools.lock"),
    "installing the pod network's tools",
  );
  try {
    missing = missingTools();
    if (!missing.length) return;
    log(`installing ${packages.join(", ")} with apt-get for the pod network (once)`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    await run(
      "apt-get",
      ["-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", ...packages],
      {
        env,
      },
    ).catch(async () => {
      // An old package list: refresh it once and try again.
      await run("apt-get", ["update"], { env });
      await run(
        "apt-get",
        ["-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", ...packages],
        {
          env,
        },
      );
    });
  } finally {
    await release();
  }
}

const INOTIFY_INSTANCES = "/proc/sys/fs/inotify/max_user_instances";
/** Room for about a hundred local clusters' inotify instances (each holds about ten). */
export const WANTED_INOTIFY_INSTANCES = 1024;

/**
 * Raises the machine's per-user inotify instance limit when it is below what several local
 * clusters need, as kind's documentation asks of its users: kube-apiserver, kube-controller-manager
 * and kube-proxy each watch their files, and with Linux's default of 128 about a dozen clusters on
 * one machine (one `npm test` with the tests' own clusters) exhaust it, the next component failing
 * with "too many open files". Only root may; others are told in the log.
 */
export async function ensureInotifyInstances(log: (line: string) => void): Promise<void> {
  const current = Number((await readFile(INOTIFY_INSTANCES, "utf8").catch(() => "")).trim());
  if (!Number.isFinite(current) || current >= WANTED_INOTIFY_INSTANCES) return;
  if (process.getuid?.() !== 0) {
    log(
      `fs.inotify.max_user_instances is ${current}: a dozen local clusters use that up; raise it (sysctl fs.inotify.max_user_instances=${WANTED_INOTIFY_INSTANCES})`,
    );
    return;
  }
  await writeFile(INOTIFY_INSTANCES, `${WANTED_INOTIFY_INSTANCES}\n`);
  log(
    `raised fs.inotify.max_user_instances from ${current} to ${WANTED_INOTIFY_INSTANCES} for the local clusters`,
  );
}
