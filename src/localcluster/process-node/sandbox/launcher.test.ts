import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { launcherArgv, type SandboxMount, writeSandbox } from "./launcher.js";
import type { RunAs } from "./users.js";

const user = (uid: number, extra: Partial<RunAs> = {}): RunAs => ({
  uid,
  gid: uid,
  groups: [],
  userNamespace: false,
  capabilities: [],
  containerUid: uid,
  containerGid: uid,
  ...extra,
});

/** Runs `script` with /bin/sh in a container; resolves with its exit code and output. */
async function inContainer(
  dir: string,
  script: string,
  options: { runAs?: RunAs; mounts?: SandboxMount[]; env?: Record<string, string> } = {},
): Promise<{ code: number | null; output: string }> {
  const spec = {
    dir,
    mounts: options.mounts ?? [],
    env: new Map(Object.entries({ PATH: "/usr/bin:/bin", ...options.env })),
    argv: ["/bin/sh", "-c", script],
    workdir: "/",
    runAs: options.runAs ?? user(2000123),
    hostname: "sandboxed",
  };
  const argv = launcherArgv(spec, await writeSandbox(spec));
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: { PATH: "/usr/sbin:/usr/bin" } });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on("close", (code) => resolve({ code, output }));
  });
}

describe("a container of the process node", { skip: process.getuid?.() !== 0 }, () => {
  let root: string;
  let secret: string;
  let volume: string;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "sandbox-"));
    secret = join(root, "admin.kubeconfig");
    await writeFile(secret, "credentials", { mode: 0o644 });
    volume = join(root, "volume");
    await mkdir(volume);
    await chmod(volume, 0o777);
  });
  after(() => rm(root, { recursive: true, force: true }));

  test("runs as its user in namespaces of its own, sees only its volumes, gets only its environment", async () => {
    const { code, output } = await inContainer(
      join(root, "c1"),
      `id -u; id -g; hostname; echo "$TOKEN"; cat ${secret} || echo no-secret; ls /root 2>&1 || true;
       ls /proc | grep -cE '^[0-9]+$'; echo written > /data/file && echo wrote; touch /usr/x 2>/dev/null || echo read-only`,
      {
        mounts: [{ kind: "dir-rw", source: volume, target: "/data" }],
        env: { TOKEN: "for-the-program-only" },
      },
    );
    assert.equal(code, 0, output);
    const lines = output.trim().split("\n");
    assert.deepEqual(lines.slice(0, 4), ["2000123", "2000123", "sandboxed", "for-the-program-only"]);
    assert.ok(output.includes("no-secret"), `the machine's files stay out of reach: ${output}`);
    assert.match(output, /ls: cannot access '\/root': No such file or directory/);
    assert.ok(Number(lines[lines.indexOf("wrote") - 1]) <= 4, `only its own processes: ${output}`);
    assert.ok(output.includes("read-only"));
    assert.equal(await readFile(join(volume, "file"), "utf8"), "written\n");
    assert.equal((await stat(join(volume, "file"))).uid, 2000123);
  });

  test("root is root of a user namespace only: its files belong to its mapped user", async () => {
    const { code, output } = await inContainer(join(root, "c2"), "id -u; touch /data/root-file", {
      runAs: user(2000124, { userNamespace: true, containerUid: 0, containerGid: 0 }),
      mounts: [{ kind: "dir-rw", source: volume, target: "/data" }],
    });
    assert.equal(code, 0, output);
    assert.equal(output.trim(), "0");
    assert.equal((await stat(join(volume, "root-file"))).uid, 2000124);
  });

  test("the exit status is the program's; a killed program's is 128 + the signal", async () => {
    assert.equal((await inContainer(join(root, "c3"), "exit 7")).code, 7);
    assert.equal((await inContainer(join(root, "c4"), "kill -9 $$")).code, 137);
  });

  test("whatever the program leaves behind dies with it", async () => {
    const marker = join(volume, "orphan-pid");
    await inContainer(join(root, "c5"), "(sleep 301.7 & echo $! > /data/orphan-pid); exit 0", {
      mounts: [{ kind: "dir-rw", source: volume, target: "/data" }],
    });
    const inside = Number((await readFile(marker, "utf8")).trim());
    assert.ok(inside > 1);
    const left = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8") === "sleep\u0000301.7\u0000";
        } catch {
          return false;
        }
      });
    assert.deepEqual(left, [], "the PID namespace ended with its init");
  });
});
