import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { V1Pod, V1Volume } from "@kubernetes/client-node";
import { containerMounts, prepareVolumes, VolumeError, type VolumeSources } from "./volumes.js";

const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("pod volumes as folders", () => {
  let dir: string;
  const tokens: { audience?: string; seconds: number }[] = [];
  const sources: VolumeSources = {
    configMap: async (_ns, name) =>
      name === "site" ? { metadata: { name }, data: { "index.html": "<h1>hi</h1>", other: "x" } } : undefined,
    secret: async (_ns, name) =>
      name === "tls" ? { metadata: { name }, data: { key: b64("k"), crt: b64("c") } } : undefined,
    claim: async (_ns, name) =>
      name === "data"
        ? { metadata: { name }, spec: { volumeName: "pv-1" }, status: { phase: "Bound" } }
        : { metadata: { name }, spec: {}, status: { phase: "Pending" } },
    volume: async (name) => ({ metadata: { name }, spec: { hostPath: { path: join(dir, "pv-1") } } }),
    token: async (_pod, audience, seconds) => {
      tokens.push({ ...(audience ? { audience } : {}), seconds });
      return { token: `token-for-${audience ?? "api"}`, expiresAt: new Date(Date.now() + seconds * 1000) };
    },
  };
  const pod = (volumes: V1Volume[]): V1Pod => ({
    metadata: { name: "p", namespace: "ns", uid: "u" },
    spec: { containers: [], volumes },
  });
  const addresses = { podIP: "127.81.0.2", hostIP: "127.0.0.1" };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "volumes-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("claims, emptyDir, secrets, config maps and projected tokens become folders and files", async () => {
    const podDir = join(dir, "pod");
    const prepared = await prepareVolumes(
      pod([
        { name: "data", persistentVolumeClaim: { claimName: "data" } },
        { name: "scratch", emptyDir: {} },
        {
          name: "certs",
          secret: { secretName: "tls", items: [{ key: "crt", path: "tls/tls.crt", mode: 0o600 }] },
        },
        { name: "web", configMap: { name: "site" } },
        {
          name: "kube-api-access",
          projected: {
            sources: [
              {
                serviceAccountToken: { path: "token", audience: "tenantry-runtimes", expirationSeconds: 600 },
              },
              { configMap: { name: "site", items: [{ key: "other", path: "ca.crt" }] } },
              {
                downwardAPI: {
                  items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }],
                },
              },
            ],
          },
        },
      ]),
      podDir,
      sources,
      addresses,
      {},
    );
    assert.equal(prepared.paths.get("data"), join(dir, "pv-1"));
    assert.ok((await stat(join(dir, "pv-1"))).isDirectory());
    assert.ok((await stat(prepared.paths.get("scratch")!)).isDirectory());
    const certs = prepared.paths.get("certs")!;
    assert.equal(await readFile(join(certs, "tls", "tls.crt"), "utf8"), "c");
    assert.equal((await stat(join(certs, "tls", "tls.crt"))).mode & 0o777, 0o600);
    assert.deepEqual((await readdir(prepared.paths.get("web")!)).sort(), ["index.html", "other"]);
    const projected = prepared.paths.get("kube-api-access")!;
    assert.equal(await readFile(join(projected, "token"), "utf8"), "token-for-tenantry-runtimes");
    assert.equal(await readFile(join(projected, "namespace"), "utf8"), "ns");
    assert.equal(await readFile(join(projected, "ca.crt"), "utf8"), "x");
    assert.deepEqual(tokens, [{ audience: "tenantry-runtimes", seconds: 600 }]);
    // Renewed at 80% of its lifetime, as the kubelet renews projected tokens.
    assert.ok(prepared.renewAt! > Date.now() + 470_000 && prepared.renewAt! < Date.now() + 490_000);
  });

  test("a local volume's path is used as it is and never made: until it exists the mount fails", async () => {
    const localPath = join(dir, "pooled", "data");
    const localSources: VolumeSources = {
      ...sources,
      volume: async (name) => ({ metadata: { name }, spec: { local: { path: localPath } } }),
    };
    const claimPod = pod([{ name: "data", persistentVolumeClaim: { claimName: "data" } }]);
    await assert.rejects(
      prepareVolumes(claimPod, join(dir, "p-local"), localSources, addresses, {}),
      (err: Error) =>
        err instanceof VolumeError &&
        err.message.endsWith(`path "${localPath}" of local volume pv-1 does not exist (yet)`),
    );
    await assert.rejects(stat(localPath), /ENOENT/, "the process node did not make the folder itself");
    await mkdir(localPath, { recursive: true });
    const prepared = await prepareVolumes(claimPod, join(dir, "p-local"), localSources, addresses, {});
    assert.equal(prepared.paths.get("data"), localPath);
  });

  test("an unbound claim or a missing secret is a mount failure naming the volume", async () => {
    await assert.rejects(
      prepareVolumes(
        pod([{ name: "v", persistentVolumeClaim: { claimName: "late" } }]),
        join(dir, "p2"),
        sources,
        addresses,
        {},
      ),
      (err: Error) =>
        err instanceof VolumeError &&
        err.message === 'MountVolume.SetUp failed for volume "v" : persistentvolumeclaim "late" is not bound',
    );
    await assert.rejects(
      prepareVolumes(
        pod([{ name: "s", secret: { secretName: "nope" } }]),
        join(dir, "p3"),
        sources,
        addresses,
        {},
      ),
      /volume "s" : secret "nope" not found/,
    );
    const optional = await prepareVolumes(
      pod([{ name: "s", secret: { secretName: "nope", optional: true } }]),
      join(dir, "p4"),
      sources,
      addresses,
      {},
    );
    assert.deepEqual(await readdir(optional.paths.get("s")!), []);
    await assert.rejects(
      prepareVolumes(
        pod([{ name: "n", nfs: { server: "x", path: "/" } }]),
        join(dir, "p5"),
        sources,
        addresses,
        {},
      ),
      /nfs volumes are not supported on the process node/,
    );
  });

  test("mounts map container paths to volumes, with subPath and subPathExpr", async () => {
    const volumes = new Map([["data", join(dir, "pv-1")]]);
    const mounts = await containerMounts(
      {
        name: "c",
        volumeMounts: [
          { name: "data", mountPath: "/home/jovyan/work/" },
          { name: "data", mountPath: "/logs", subPathExpr: "$(POD)/logs" },
        ],
      },
      volumes,
      new Map([["POD", "p"]]),
    );
    assert.equal(mounts.get("/home/jovyan/work"), join(dir, "pv-1"));
    assert.equal(mounts.get("/logs"), join(dir, "pv-1", "p", "logs"));
    assert.ok((await stat(join(dir, "pv-1", "p", "logs"))).isDirectory());
    await assert.rejects(
      containerMounts(
        { name: "c", volumeMounts: [{ name: "data", mountPath: "/x", subPath: "../escape" }] },
        volumes,
        new Map(),
      ),
      /subPath "..\/escape" must be relative and stay inside volume "data"/,
    );
  });
});
